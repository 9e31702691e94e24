// ops/kernels.cpp — the backend dispatch of ops/kernels.hpp, generated from cuda/kernel_list.inc:
// a CUDA tensor's call runs under on_device (device, op name, error conversion), a CPU tensor's
// goes to cpu::. Deliberately not here: any kernel, any check (the op checked its arguments).
#include "ops/kernels.hpp"

#include "ops/cpu/kernels.hpp"
#include "ops/cuda_dispatch.hpp"

namespace tg::detail {

#define TG_KERNEL(name, params, args)                                                \
  void Kernels::name params const {                                                  \
    if (device_.is_cuda()) return on_device(op_, device_, [&] { cuda::name args; }); \
    cpu::name args;                                                                  \
  }
#include "cuda/kernel_list.inc"
#undef TG_KERNEL

}  // namespace tg::detail
