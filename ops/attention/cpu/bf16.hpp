// ops/attention/cpu/bf16.hpp — whether a bfloat16 attention's products run on AVX512-BF16 dot
// products (ops/attention/cpu/gemm_bf16_avx512.cpp: operands rounded to bfloat16, float32
// accumulation) or in float32 on the bfloat16 values widened (the float32 kernels): the choice,
// TG_ATTENTION_BF16=dot|float32 in the environment (read at each bfloat16 attention), a
// setter for tests, and the product entry. Float16 always multiplies in float32 (these CPUs have
// no float16 dot product). Deliberately not here: the kernels, the fused loops (fused.cpp).
// Internal to ops/attention/.
#pragma once

#include <cstdint>

namespace tg::cpu {

enum class AttentionBf16 { Dot, Float32 };

// Whether this CPU and build have the dot products (AVX512-BF16, and the AVX-512 attention
// kernels chosen: set_kernel_variant(KernelFamily::Attention, false) turns them off too).
bool attention_bf16_dot_available();
// Tiles narrower than this many keys keep float32 products by default: measured on AMD EPYC Zen 4
// (docs/mixed-precision.md, "Attention"), the dot products lose below it (per-call packing and
// scratch against a few hundred products) and win from it on.
constexpr int64_t kAttentionBf16MinKeys = 64;
// Whether a bfloat16 attention started now, whose widest row tile spans `keys` keys, multiplies on
// the dot products: the forced choice (setter, else the environment; forced `dot` at any width),
// else the dot products where available and keys >= kAttentionBf16MinKeys. Throws tg::Error
// naming TG_ATTENTION_BF16 and its values for any other value, and for `dot` on a CPU or build
// without AVX512-BF16. Forced `dot` with the AVX-512 attention kernels switched off runs float32.
bool attention_bf16_dot(int64_t keys = kAttentionBf16MinKeys);
// Forces a choice for later calls (throws as above for Dot without AVX512-BF16);
// reset_attention_bf16: the environment's choice, or the default, again.
void set_attention_bf16(AttentionBf16 mode);
void reset_attention_bf16();

// attention_gemm_f32's contract (ops/core/cpu/kernels.hpp) with bfloat16 operands on the dot
// products; bpack (⌈K/2⌉·64 floats) and apack (⌈M/6⌉·6·⌈K/2⌉ floats) are required. Only while
// attention_bf16_dot_available().
void attention_gemm_bf16(int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t am,
                         int64_t ak, const float* B, int64_t ldb, bool acc, float* C, int64_t ldc,
                         float* bpack, float* apack, const float* keys = nullptr);

}  // namespace tg::cpu
