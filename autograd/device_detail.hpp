// autograd/device_detail.hpp — internal (not installed): the CUDA runtime calls of storage.cpp
// and device.cpp, with tg::cuda::Error turned into tg::Error and device indices checked.
#pragma once

#include "autograd/tensor.hpp"
#include "cuda/runtime.cuh"

#include <fmt/format.h>

#include <string>

namespace tg::detail {
// Runs f, turning a tg::cuda::Error into tg::Error (same message).
template <typename F>
decltype(auto) cuda_call(const char* op, F&& f) {
  tg::cuda::OpScope scope(op);
  try {
    return f();
  } catch (const tg::cuda::Error& e) {
    throw Error(e.what());
  }
}
inline void check_cuda_index(int index, const char* op) {
  const int n = tg::cuda::device_count();
  if (index < 0 || index >= n) {
    const std::string why = tg::cuda::unavailable_reason();
    throw Error(fmt::format("{}: cuda:{} is not available ({} CUDA device{} visible{}{})", op,
                            index, n, n == 1 ? "" : "s", why.empty() ? "" : "; ", why));
  }
}
}  // namespace tg::detail
