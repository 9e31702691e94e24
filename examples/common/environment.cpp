// examples/common/environment.cpp — run_environment() (see environment.hpp).
#include "common/environment.hpp"

#include "autograd/tensor.hpp"
#include "nn/dist/dist.hpp"
#include "ops/cpu/kernels.hpp"

extern "C" char* openblas_get_corename();  // OpenBLAS: the kernel set it picked at load

namespace tgx {

nlohmann::json run_environment() {
  const char* core = openblas_get_corename();
  return {{"blas_core", core != nullptr ? core : "unknown"},
          {"simd", tg::cpu::simd_kernels()},
          {"threads", tg::get_num_threads()},
          {"world_size", tg::dist::world_size()}};
}

}  // namespace tgx
