// ops/attention/cpu/bf16.cpp — the choice between the bfloat16 attention's dot products and its
// float32 products (bf16.hpp): TG_ATTENTION_BF16, the tests' setter, the entry to the table slot.
// Deliberately not here: the kernel (gemm_bf16_avx512.cpp), the CPU check (autograd/convert.cpp's,
// through the table isa.cpp fills).
#include "ops/attention/cpu/bf16.hpp"

#include "autograd/convert.hpp"
#include "autograd/tensor.hpp"
#include "ops/core/cpu/isa.hpp"

#include <fmt/format.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace tg::cpu {
namespace {
constexpr const char* kVar = "TG_ATTENTION_BF16";
constexpr int kUnset = -1;
std::atomic<int>& forced() {  // an AttentionBf16, or kUnset
  static std::atomic<int> f{kUnset};
  return f;
}
bool cpu_has_dot() { return convert::path_supported(convert::Path::Avx512Bf16); }
void check_dot(const char* how) {
  if (!cpu_has_dot())
    throw Error(fmt::format(
        "{}: {}=dot asks for AVX512-BF16 dot products, which this CPU or build lacks (use float32)",
        how, kVar));
}
// The environment's choice (read on every call: a getenv per attention call costs nothing next to
// it, and tests may change it); kUnset when the variable is not set.
int from_env() {
  const char* v = std::getenv(kVar);
  if (!v) return kUnset;
  if (std::strcmp(v, "float32") == 0) return static_cast<int>(AttentionBf16::Float32);
  if (std::strcmp(v, "dot") != 0)
    throw Error(fmt::format(
        "scaled_dot_product_attention: {}={}: unknown value, expected dot or float32", kVar, v));
  check_dot("scaled_dot_product_attention");
  return static_cast<int>(AttentionBf16::Dot);
}
}  // namespace

bool attention_bf16_dot_available() { return isa::table().attention_gemm_bf16 != nullptr; }

bool attention_bf16_dot(int64_t keys) {
  int m = forced().load(std::memory_order_relaxed);
  if (m == kUnset) m = from_env();
  if (m == static_cast<int>(AttentionBf16::Float32)) return false;
  return attention_bf16_dot_available() &&
         (m == static_cast<int>(AttentionBf16::Dot) || keys >= kAttentionBf16MinKeys);
}

void set_attention_bf16(AttentionBf16 mode) {
  if (mode == AttentionBf16::Dot) check_dot("set_attention_bf16");
  forced().store(static_cast<int>(mode), std::memory_order_relaxed);
}
void reset_attention_bf16() { forced().store(kUnset, std::memory_order_relaxed); }

void attention_gemm_bf16(int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t am,
                         int64_t ak, const float* B, int64_t ldb, bool acc, float* C, int64_t ldc,
                         float* bpack, float* apack, const float* keys) {
  const auto f = isa::table().attention_gemm_bf16;
  if (!f)
    throw Error(
        "attention_gemm_bf16: no bfloat16 attention products in use (check "
        "cpu::attention_bf16_dot_available())");
  if (!bpack || !apack) throw Error("attention_gemm_bf16: bpack and apack are required");
  f(M, N, K, alpha, A, am, ak, B, ldb, keys, acc, C, ldc, bpack, apack);
}

}  // namespace tg::cpu
