// autograd/cuda_call.hpp — internal (not installed): the one place a tg::cuda::Error becomes a
// tg::Error. Included only by the layers that call cuda/ (autograd/storage.cpp and device.cpp,
// ops/core/kernels.cpp, nn/dist's NCCL backend); everything else reaches CUDA through them.
#pragma once

#include "autograd/tensor.hpp"
#include "cuda/runtime.cuh"

namespace tg::detail {
// Runs f with `op` named in CUDA error messages, turning a tg::cuda::Error into tg::Error (same
// message).
template <typename F>
decltype(auto) cuda_call(const char* op, F&& f) {
  tg::cuda::OpScope scope(op);
  try {
    return f();
  } catch (const tg::cuda::Error& e) {
    throw Error(e.what());
  }
}
}  // namespace tg::detail
