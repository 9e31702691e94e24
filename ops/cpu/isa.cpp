// ops/cpu/isa.cpp — chooses the instruction-set table (ops/cpu/isa.hpp) once: AVX-512 where the
// build compiled those kernels (ops/cpu/*_avx512.cpp: the compiler took the flags) and the CPU has
// AVX-512 F/CD/DQ/BW/VL, else the build's own (AVX2 + FMA by default). Decided from CPUID
// (libgcc's __builtin_cpu_supports, which also checks that the OS saves the AVX-512 registers);
// tests and benchmarks may switch AVX-512 off. Also the entry points kernels.hpp gives the
// attention's AVX-512 products. Deliberately not here: the kernels.
#include "ops/cpu/isa.hpp"

#include "ops/cpu/kernels.hpp"
#include "ops/detail.hpp"

#include <xsimd/xsimd.hpp>

#include <atomic>

namespace tg::cpu {
namespace isa {
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

Table make(bool avx512) {
  Table t;
  t.name = xsimd::default_arch::name();
  native::fill_softmax(t);
#if defined(TG_HAVE_AVX512)
  if (avx512) {
    t.name = "avx512";
    avx512::fill_softmax(t);
    avx512::fill_unary(t);
    avx512::fill_attention(t);
  }
#endif
  return t;
}

// Function-local statics: kernels may run from other translation units' static initialisers.
const Table& native_table() {
  static const Table t = make(false);
  return t;
}
// AVX-512's table where the CPU has it, else the build's own (the same object).
const Table& best_table() {
  static const Table avx512 = make(true);  // function pointers only: nothing runs unless chosen
  static const Table& t = cpu_has_avx512() ? avx512 : native_table();
  return t;
}
std::atomic<const Table*>& active() {
  static std::atomic<const Table*> a{&best_table()};
  return a;
}
}  // namespace

const Table& table() { return *active().load(std::memory_order_relaxed); }
}  // namespace isa

bool simd_avx512() { return &isa::table() != &isa::native_table(); }
bool attention_packed_products() { return isa::table().attention_gemm_f32 != nullptr; }
const char* simd_kernels() { return isa::table().name; }
bool set_simd_kernels(bool avx512) {
  isa::active().store(avx512 ? &isa::best_table() : &isa::native_table(),
                      std::memory_order_relaxed);
  return simd_avx512() == avx512;
}

void attention_gemm_f32(int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t am,
                        int64_t ak, const float* B, int64_t ldb, bool acc, float* C, int64_t ldc,
                        float* bpack, float* apack, const float* keys) {
  const auto f = isa::table().attention_gemm_f32;
  if (!f)
    throw Error(
        "attention_gemm_f32: no packed attention kernels in use (check "
        "cpu::attention_packed_products())");
  f(M, N, K, alpha, A, am, ak, B, ldb, keys, acc, C, ldc, bpack, apack);
}
void attention_transpose_f32(int64_t rows, int64_t cols, const float* src, int64_t lds, float* dst,
                             int64_t ldd) {
  const auto f = isa::table().attention_transpose_f32;
  if (!f)
    throw Error(
        "attention_transpose_f32: no packed attention kernels in use (check "
        "cpu::attention_packed_products())");
  f(rows, cols, src, lds, dst, ldd);
}

}  // namespace tg::cpu
