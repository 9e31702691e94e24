// examples/common/environment.cpp — run_environment() (see environment.hpp).
#include "common/environment.hpp"

#include "autograd/tensor.hpp"
#include "nn/dist/dist.hpp"
#include "ops/ops.hpp"  // tg::simd_kernels

extern "C" char* openblas_get_corename();  // OpenBLAS: the kernel set it picked at load

namespace tgx {

nlohmann::json run_environment() {
  const char* core = openblas_get_corename();
  return {{"blas_core", core != nullptr ? core : "unknown"},
          {"simd", tg::simd_kernels()},
          {"threads", tg::get_num_threads()},
          {"world_size", tg::dist::world_size()}};
}

}  // namespace tgx
