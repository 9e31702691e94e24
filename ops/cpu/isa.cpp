// ops/cpu/isa.cpp — which instruction set our hand-written kernels run on: AVX-512 where the build
// compiled those kernels (ops/cpu/softmax_avx512.cpp, ops/cpu/attention_avx512.cpp: the compiler
// took the flags) and the CPU has AVX-512 F/CD/DQ/BW/VL, else the build's own (AVX2 + FMA by
// default). Decided once at start-up from CPUID (libgcc's __builtin_cpu_supports, which also
// checks that the OS saves the AVX-512 registers); tests and benchmarks may switch AVX-512 off.
// Also the entry points of the AVX-512 attention GEMMs (valid only while simd_avx512()).
// Deliberately not here: the kernels.
#include "ops/cpu/kernels.hpp"
#include "ops/detail.hpp"

#include <xsimd/xsimd.hpp>

#include <atomic>

namespace tg::cpu {

#if defined(TG_HAVE_AVX512)
namespace avx512 {
void gemm_f32(int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t am, int64_t ak,
              const float* B, int64_t ldb, const float* keys, bool acc, float* C, int64_t ldc,
              float* bpack, float* apack);
void transpose_f32(int64_t rows, int64_t cols, const float* src, int64_t lds, float* dst,
                   int64_t ldd);
}  // namespace avx512
#endif

namespace {
bool cpu_has_avx512() {
#if defined(TG_HAVE_AVX512)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl");
#else
  return false;
#endif
}
const bool g_has_avx512 = cpu_has_avx512();
}  // namespace

namespace isa {
std::atomic<bool> use_avx512{g_has_avx512};
}  // namespace isa

const char* simd_kernels() { return simd_avx512() ? "avx512" : xsimd::default_arch::name(); }
bool set_simd_kernels(bool avx512) {
  isa::use_avx512.store(avx512 && g_has_avx512, std::memory_order_relaxed);
  return simd_avx512() == avx512;
}

void attention_gemm_f32(int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t am,
                        int64_t ak, const float* B, int64_t ldb, bool acc, float* C, int64_t ldc,
                        float* bpack, float* apack, const float* keys) {
#if defined(TG_HAVE_AVX512)
  if (simd_avx512())
    return avx512::gemm_f32(M, N, K, alpha, A, am, ak, B, ldb, keys, acc, C, ldc, bpack, apack);
#endif
  throw Error("attention_gemm_f32: called without AVX-512 kernels (check cpu::simd_avx512())");
}
void attention_transpose_f32(int64_t rows, int64_t cols, const float* src, int64_t lds, float* dst,
                             int64_t ldd) {
#if defined(TG_HAVE_AVX512)
  if (simd_avx512()) return avx512::transpose_f32(rows, cols, src, lds, dst, ldd);
#endif
  throw Error("attention_transpose_f32: called without AVX-512 kernels (check cpu::simd_avx512())");
}

}  // namespace tg::cpu
