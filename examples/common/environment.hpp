// examples/common/environment.hpp — what a run's figures depend on besides its options, for the
// "environment" entry of every training program's metrics.json: OpenBLAS's kernel set (its
// rounding moves a classifier's accuracy by an email or two), our kernels' instruction set, the
// thread count and the world size. tools/results.py prints the BLAS core beside each result.
#pragma once

#include <nlohmann/json.hpp>

namespace tgx {

// {"blas_core": "SkylakeX", "simd": "avx512", "threads": 2, "world_size": 1}
nlohmann::json run_environment();

}  // namespace tgx
