// ops/core/cpu/isa.cpp — chooses the instruction-set table (ops/core/cpu/isa.hpp) once, family by family:
// AVX-512 where the build compiled those kernels (ops/<family>/cpu/*_avx512.cpp: the compiler took the
// flags), the CPU has AVX-512 F/CD/DQ/BW/VL (CPUID through libgcc's __builtin_cpu_supports, which
// also checks that the OS saves the AVX-512 registers), and the preference list below, measured
// per CPU model, does not prefer the build's own; tests and benchmarks may switch families. Also
// the entry points kernels.hpp gives the attention's AVX-512 products. Deliberately not here: the
// kernels.
#include "ops/core/cpu/isa.hpp"

#include "autograd/convert.hpp"
#include "ops/core/cpu/kernels.hpp"
#include "ops/core/detail.hpp"

#include <xsimd/xsimd.hpp>

#include <cpuid.h>
#include <fmt/format.h>

#include <atomic>
#include <cstring>
#include <string>

namespace tg::cpu {
namespace isa {
namespace {
constexpr int kFamilies = 4;  // KernelFamily's enumerators, bits of a choice
constexpr unsigned kAll = (1u << kFamilies) - 1;
constexpr unsigned bit(KernelFamily f) { return 1u << static_cast<int>(f); }
constexpr const char* kFamilyNames[kFamilies] = {"softmax", "unary", "attention", "reduce"};

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

// The CPU model as CPUID reports it: vendor, display family and model.
struct CpuModel {
  char vendor[13] = "unknown";
  unsigned family = 0, model = 0;
};
CpuModel cpu_model() {
  CpuModel m;
  unsigned a, b, c, d;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return m;
  std::memcpy(m.vendor, &b, 4);
  std::memcpy(m.vendor + 4, &d, 4);
  std::memcpy(m.vendor + 8, &c, 4);
  m.vendor[12] = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return m;
  const unsigned base_family = (a >> 8) & 0xf, base_model = (a >> 4) & 0xf;
  m.family = base_family == 0xf ? base_family + ((a >> 20) & 0xff) : base_family;
  m.model =
      base_family == 0x6 || base_family == 0xf ? (((a >> 16) & 0xf) << 4) | base_model : base_model;
  return m;
}

// Per CPU model, the families bench/run.sh measured there (FILTER=variants: each family timed
// with its AVX-512 variant and with the build's own, interleaved; docs/cpu-kernels.md, "Variants
// per CPU", has the figures) and, of those, the ones whose AVX-512 variant was the faster. A
// family not measured on a model, and every family of a model no line names, runs AVX-512 where
// the CPU has it (chosen by the instruction set alone: kernel_choice() says so).
struct Preference {
  const char* vendor;
  unsigned family, model;
  unsigned measured, avx512;  // bits of KernelFamily
};
constexpr unsigned kMeasuredOn0xcf =
    bit(KernelFamily::Softmax) | bit(KernelFamily::Unary) | bit(KernelFamily::Attention);
constexpr Preference kPreferences[] = {
    // Xeon, family 6 model 0xa7: all four faster on AVX-512.
    {"GenuineIntel", 6, 0xa7, kAll, kAll},
    // Xeon, family 6 model 0xcf: softmax, unary and the attention products faster on AVX-512
    // (docs/cpu-kernels.md's AVX-512 table); reduce not measured there.
    {"GenuineIntel", 6, 0xcf, kMeasuredOn0xcf, kMeasuredOn0xcf},
};

const Preference* preference(const CpuModel& m) {
  for (const Preference& p : kPreferences)
    if (std::strcmp(p.vendor, m.vendor) == 0 && p.family == m.family && p.model == m.model)
      return &p;
  return nullptr;
}

// The families this build and CPU can run on AVX-512 at all.
unsigned possible() { return cpu_has_avx512() ? kAll : 0u; }

Table make(unsigned avx512) {
  Table t;  // its name is set by Tables
  native::fill_softmax(t);
  native::fill_reduce(t);
#if defined(TG_HAVE_AVX512)
  if (avx512 & bit(KernelFamily::Softmax)) avx512::fill_softmax(t);
  if (avx512 & bit(KernelFamily::Unary)) avx512::fill_unary(t);
  if (avx512 & bit(KernelFamily::Attention)) avx512::fill_attention(t);
  // the bfloat16 products: AVX512-BF16 as autograd/convert.cpp's check finds it
  if ((avx512 & bit(KernelFamily::Attention)) && convert::path_supported(convert::Path::Avx512Bf16))
    avx512::fill_attention_bf16(t);
  if (avx512 & bit(KernelFamily::Reduce)) avx512::fill_reduce(t);
#else
  (void)avx512;
#endif
  return t;
}

// Every combination, made once (function pointers only: nothing runs unless chosen), in
// function-local statics: kernels may run from other translation units' static initialisers.
struct Tables {
  Table t[kAll + 1];
  std::string names[kAll + 1];
  Tables() {
    const std::string native = xsimd::default_arch::name();
    for (unsigned c = 0; c <= kAll; ++c) {
      t[c] = make(c);
      if (c == 0) {
        names[c] = native;
      } else if (c == kAll) {
        names[c] = "avx512";
      } else {
        names[c] = "avx512 (";
        const char* sep = "";
        for (int f = 0; f < kFamilies; ++f)
          if (!(c & (1u << f)))
            names[c] += fmt::format("{}{}: {}", sep, kFamilyNames[f], native), sep = ", ";
        names[c] += ")";
      }
      t[c].name = names[c].c_str();
    }
  }
};
const Tables& tables() {
  static const Tables t;
  return t;
}
// The per-CPU choice: the preference list's line for this model, else every family possible.
unsigned default_choice() {
  static const unsigned c = [] {
    const Preference* p = preference(cpu_model());
    return possible() & (p ? (p->avx512 & p->measured) | (kAll & ~p->measured) : kAll);
  }();
  return c;
}
std::atomic<unsigned>& active() {
  static std::atomic<unsigned> a{default_choice()};
  return a;
}
}  // namespace

const Table& table() { return tables().t[active().load(std::memory_order_relaxed)]; }
}  // namespace isa

bool simd_avx512() { return isa::active().load(std::memory_order_relaxed) != 0; }
bool attention_packed_products() { return isa::table().attention_gemm_f32 != nullptr; }
const char* simd_kernels() { return isa::table().name; }
std::string kernel_choice() {
  const isa::CpuModel m = isa::cpu_model();
  const isa::Preference* p = isa::preference(m);
  std::string how;
  if (!isa::possible()) {
    how = "no AVX-512 in this build or CPU";
  } else {
    std::string measured, guessed;
    for (int f = 0; f < isa::kFamilies; ++f) {
      std::string& to = p && (p->measured & (1u << f)) ? measured : guessed;
      to += fmt::format("{}{}", to.empty() ? "" : ", ", isa::kFamilyNames[f]);
    }
    if (!measured.empty()) how = "measured on this model: " + measured;
    if (!guessed.empty())
      how += fmt::format("{}by instruction set: {}", how.empty() ? "" : "; ", guessed);
  }
  return fmt::format("{} on {} family {} model {:#x} ({})", simd_kernels(), m.vendor, m.family,
                     m.model, how);
}
bool set_simd_kernels(bool avx512) {
  const unsigned want = avx512 ? isa::possible() : 0u;
  isa::active().store(want, std::memory_order_relaxed);
  return avx512 ? want == isa::kAll : true;
}
bool set_kernel_variant(KernelFamily family, bool avx512) {
  const unsigned b = isa::bit(family);
  if (avx512 && !(isa::possible() & b)) return false;
  unsigned cur = isa::active().load(std::memory_order_relaxed);
  isa::active().store(avx512 ? cur | b : cur & ~b, std::memory_order_relaxed);
  return true;
}
void reset_simd_kernels() { isa::active().store(isa::default_choice(), std::memory_order_relaxed); }

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
