// ops/core/kernels.cpp — the backend dispatch of ops/core/kernels.hpp, generated from
// ops/kern/kernel_list.inc: a CUDA tensor's call runs on its device with the op named in CUDA
// errors, converted to tg::Error by autograd's cuda_call (the one conversion); a CPU tensor's goes
// to cpu::. The one file of ops/ that calls cuda/; and tg::simd_kernels(), the CPU table's
// instruction set for programs outside the library. Deliberately not here: any kernel, any check
// (the op checked its arguments).
#include "ops/core/kernels.hpp"
#include "ops/ops.hpp"  // tg::simd_kernels

#include "autograd/cuda_call.hpp"
#include "cuda/kernels.cuh"
#include "cuda/runtime.cuh"
#include "ops/core/cpu/kernels.hpp"

#include <fmt/format.h>

namespace tg::detail {

namespace {
// Runs f() on device d (a CUDA device) with `op` named in CUDA errors.
template <typename F>
decltype(auto) on_device(const char* op, Device d, F&& f) {
  return cuda_call(op, [&]() -> decltype(auto) {
    cuda::set_device(d.index);
    return f();
  });
}
[[noreturn]] void cuda_only(const char* op, const char* kernel) {
  throw Error(
      fmt::format("{}: internal error: kernel {} runs on CUDA only (the CPU computes it "
                  "inside the op)",
                  op, kernel));
}
}  // namespace

#define TG_KERNEL(name, params, args)                                                \
  void Kernels::name params const {                                                  \
    if (device_.is_cuda()) return on_device(op_, device_, [&] { cuda::name args; }); \
    cpu::name args;                                                                  \
  }
#define TG_CUDA_KERNEL(ret, name, params, args)                               \
  ret Kernels::name params const {                                            \
    if (!device_.is_cuda()) cuda_only(op_, #name);                            \
    return on_device(op_, device_, [&]() -> ret { return cuda::name args; }); \
  }
#include "ops/kern/kernel_list.inc"
#undef TG_CUDA_KERNEL
#undef TG_KERNEL

}  // namespace tg::detail

const char* tg::simd_kernels() { return cpu::simd_kernels(); }
