// ops/core/kernels.hpp — internal to ops/: the one call an op makes to run a kernel on its tensors'
// backend, kernels(op, x).name(...), for every kernel of
// ops/kern/kernel_list.inc. On a CUDA device it selects the device, names the op in CUDA errors and
// turns tg::cuda::Error into tg::Error (ops/core/kernels.cpp, the one place that calls cuda/); on the
// CPU it calls cpu::name (ops/core/cpu/kernels.hpp), whose dtype dispatch is inside each family's cpu/ file. Arguments:
// the kernels' (dtype code, void*, sizes), with the codes of ops/kern/kernel_codes.hpp. nn/ never
// includes it: it reaches kernels through tensor-level entries (ops/optim/entries.hpp).
#pragma once

#include "autograd/tensor.hpp"
#include "ops/kern/kernel_codes.hpp"

#include <cstddef>
#include <cstdint>

namespace tg::detail {

static_assert(static_cast<int>(kern::DT::F32) == static_cast<int>(DType::Float32) &&
                  static_cast<int>(kern::DT::F64) == static_cast<int>(DType::Float64) &&
                  static_cast<int>(kern::DT::I64) == static_cast<int>(DType::Int64) &&
                  static_cast<int>(kern::DT::Bool) == static_cast<int>(DType::Bool) &&
                  static_cast<int>(kern::DT::BF16) == static_cast<int>(DType::BFloat16) &&
                  static_cast<int>(kern::DT::F16) == static_cast<int>(DType::Float16),
              "kern::DT must number dtypes like tg::DType");

// A dtype as the kernels' code.
inline kern::DT cdt(DType t) { return static_cast<kern::DT>(t); }
inline bool on_cuda(const Tensor& t) { return t.device().type == DeviceType::CUDA; }

class Kernels {
 public:
  Kernels(const char* op, Device device) : op_(op), device_(device) {}
  using AttentionLayout = kern::AttentionLayout;
  using BinOp = kern::BinOp;
  using DT = kern::DT;
  using MaskDesc = kern::MaskDesc;
  using RedOp = kern::RedOp;
  using ScanOp = kern::ScanOp;
  using ScatterOp = kern::ScatterOp;
  using Strided = kern::Strided;
  using UnOp = kern::UnOp;
#define TG_KERNEL(name, params, args) void name params const;
#define TG_CUDA_KERNEL(ret, name, params, args) ret name params const;
#include "ops/kern/kernel_list.inc"
#undef TG_CUDA_KERNEL
#undef TG_KERNEL

 private:
  const char* op_;
  Device device_;
};

// The kernels of t's device (or of device d), `op` named in their errors.
inline Kernels kernels(const char* op, const Tensor& t) { return Kernels(op, t.device()); }
inline Kernels kernels(const char* op, Device d) { return Kernels(op, d); }
// A tensor's data, or null when it is undefined (an optional operand).
inline void* data_or_null(const Tensor& t) { return t.defined() ? t.data_ptr() : nullptr; }

}  // namespace tg::detail
