// ops/matmul/reduced_gemm.hpp — which path multiplies bfloat16 and float16 matrices on the CPU
// (matmul, mm, bmm, linear and their backward; docs/mixed-precision.md, "GEMMs"):
//   onednn    oneDNN's matmul primitive (float32 accumulation, output rounded once; AMX tiles or
//             AVX512-BF16 dot products, whichever oneDNN finds), built when CMake finds libdnnl;
//   fallback  both operands converted to float32 (autograd/convert.hpp), OpenBLAS sgemm, the
//             product rounded once. Always available.
// The best path for the dtype is chosen on first use: oneDNN where it was built and has a
// non-reference implementation for that dtype on this CPU, else the fallback.
// TG_GEMM_BF16=onednn|fallback in the environment, or set_path, forces one for both reduced
// dtypes (tests run every path on any machine); forcing oneDNN where it cannot run is an error.
// Deliberately not here: float32/float64 GEMMs (OpenBLAS, unchanged), cuBLAS (cuda/).
#pragma once

#include "autograd/tensor.hpp"

namespace tg::gemm {

enum class Path { OneDnn, Fallback };
const char* path_name(Path p);  // "onednn", "fallback"
bool onednn_built();            // tapegrad was built with oneDNN (TG_ONEDNN)
// oneDNN is built and has an implementation for dtype (bfloat16 or float16) on this CPU; impl
// receives its name (ONEDNN_VERBOSE's "brg:avx512_core_bf16"), or why not.
bool onednn_runs(DType dtype, std::string* impl = nullptr);
// The path a dtype GEMM takes now (forced, or the best for the dtype).
Path path(DType dtype);
// Forces p for both reduced dtypes (throws tg::Error if p is onednn and oneDNN is not built);
// reset_path: the environment's choice, or the best, again.
void set_path(Path p);
void reset_path();

}  // namespace tg::gemm
