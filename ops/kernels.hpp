// ops/kernels.hpp — internal (not installed): the one call an op makes to run a kernel on its
// tensors' backend, kernels(op, x).name(...), for every kernel of cuda/kernel_list.inc. On a CUDA
// device it selects the device, names the op in CUDA errors and turns tg::cuda::Error into
// tg::Error (ops/kernels.cpp); on the CPU it calls cpu::name (ops/cpu/kernels.hpp), whose dtype
// dispatch is inside ops/cpu. Arguments: the CUDA kernels' (dtype code, void*, sizes).
#pragma once

#include "autograd/tensor.hpp"
#include "cuda/kernels.cuh"
#include "ops/cuda_dispatch.hpp"  // cdt: a dtype as the kernels' code

namespace tg::detail {

class Kernels {
 public:
  Kernels(const char* op, Device device) : op_(op), device_(device) {}
  using DT = cuda::DT;
  using UnOp = cuda::UnOp;
#define TG_KERNEL(name, params, args) void name params const;
#include "cuda/kernel_list.inc"
#undef TG_KERNEL

 private:
  const char* op_;
  Device device_;
};

// The kernels of t's device, `op` named in their errors.
inline Kernels kernels(const char* op, const Tensor& t) { return Kernels(op, t.device()); }
// A tensor's data, or null when it is undefined (an optional operand).
inline void* data_or_null(const Tensor& t) { return t.defined() ? t.data_ptr() : nullptr; }

}  // namespace tg::detail
