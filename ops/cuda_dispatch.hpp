// ops/cuda_dispatch.hpp — internal: how an op reaches cuda/ (not installed). Each op checks its
// arguments as on the CPU, then, when its inputs live on a CUDA device, calls the raw-pointer
// kernels of cuda/kernels.cuh through on_device(), which selects the device, names the op in
// CUDA error messages and turns tg::cuda::Error into tg::Error. Deliberately no kernels here.
#pragma once

#include "autograd/tensor.hpp"
#include "cuda/kernels.cuh"
#include "cuda/runtime.cuh"

#include <fmt/format.h>

#include <initializer_list>
#include <vector>

namespace tg::detail {

static_assert(static_cast<int>(cuda::DT::F32) == static_cast<int>(DType::Float32) &&
                  static_cast<int>(cuda::DT::F64) == static_cast<int>(DType::Float64) &&
                  static_cast<int>(cuda::DT::I64) == static_cast<int>(DType::Int64) &&
                  static_cast<int>(cuda::DT::Bool) == static_cast<int>(DType::Bool),
              "cuda::DT must number dtypes like tg::DType");

inline bool on_cuda(const Tensor& t) { return t.device().type == DeviceType::CUDA; }
inline cuda::DT cdt(DType t) { return static_cast<cuda::DT>(t); }

// Runs f() on device d (a CUDA device) with `op` named in CUDA errors.
template <typename F>
decltype(auto) on_device(const char* op, Device d, F&& f) {
  cuda::OpScope scope(op);
  try {
    cuda::set_device(d.index);
    return f();
  } catch (const cuda::Error& e) {
    throw Error(e.what());
  }
}

// Every tensor argument of one op lives on one device: the error names the op and both.
inline void check_same_device(const Tensor& a, const Tensor& b, const char* op, const char* an,
                              const char* bn) {
  if (a.defined() && b.defined() && a.device() != b.device())
    throw Error(fmt::format("{}: {} {} is on {} but {} {} is on {}; move one with .to()", op, an,
                            shape_str(a.shape()), a.device().str(), bn, shape_str(b.shape()),
                            b.device().str()));
}

// A Strided over `out` (contiguous) with up to two more operands broadcast to it.
cuda::Strided make_strided(const Shape& out, std::initializer_list<const Shape*> operands);
// Operand k's strides and offset set to a tensor viewed with `strides` (elements) from `offset`.
void set_operand(cuda::Strided& st, int k, const Shape& strides, int64_t offset);

// Reduces x over the dims flagged in `reduced` with op; the result has x's rank (reduced dims 1).
Tensor cuda_reduce(const Tensor& x, const std::vector<bool>& reduced, cuda::RedOp op);

}  // namespace tg::detail
