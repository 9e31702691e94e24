// cuda/kernels.cuh — the plain C++ face of tapegrad's CUDA kernels: raw device pointers, sizes and
// small POD descriptors only (no CUDA, fmt or library headers), so ops/ can include it from any
// translation unit. ops/ checks every argument and shape first; these functions trust them.
//
// Conventions (mirroring the CPU kernels in ops/, which are the specification):
//   - Every pointer is device memory on the current device, contiguous row-major unless a stride
//     array says otherwise. Every launch goes to the device's one stream (runtime.cuh: stream()).
//   - `dt` is the element type (DT below, same numbering as tg::DType). Floating kernels accept
//     F32 and F64; each entry point says where it accumulates in double.
//   - Argument order as in llm.c: outputs, inputs, saved buffers, sizes, options.
//   - A failing launch throws tg::cuda::Error (runtime.cuh) naming the call, file, line and op.
// Shape vocabulary: B batch, T/S query/key length, C channels, NH heads, hs head size, V vocab,
// N rows, D a trailing size.
#pragma once

#include <cstdint>

#include "ops/kern/kernel_codes.hpp"

namespace tg::cuda {

using kern::AttentionLayout;
using kern::BinOp;
using kern::DT;
using kern::kAttentionMaxHeadSize;
using kern::kMaxBlocked;
using kern::kMaxDims;
using kern::MaskDesc;
using kern::RedOp;
using kern::ScanOp;
using kern::ScatterOp;
using kern::Strided;
using kern::UnOp;

// ---- elementwise (cuda/elementwise.cu) ----
// out[i] = a[i] op b[i] over st (operands 0, 1, 2); a and b of type dt, out of type out_dt (dt
// for arithmetic, Bool for comparisons). Max/Min propagate NaN like torch.maximum. Int64 Div is
// not offered (ops/ rejects it); int64 Pow too.
void binary(BinOp op, DT dt, DT out_dt, void* out, const void* a, const void* b, const Strided& st);

// out[i] = f(x[i]) for i < n; dt floating.
void unary(UnOp op, DT dt, void* out, const void* x, int64_t n, double p0 = 0, double p1 = 0);
// dx[i] = g[i] · f'(x[i]) for i < n, where y = f(x) is the forward output. The CPU's derivatives,
// exactly: Exp/Tanh/Sigmoid/Sqrt/Rsqrt read y; Log/Abs/Relu/Gelu*/RDivS/PowS/Clamp read x
// (Abs: sign(x), 0 at 0; Relu: 0 where x <= 0, so NaN passes; Clamp: 1 where p0 <= x <= p1);
// Neg/AddS/MulS/RSubS read neither (x and y may be null when not read).
void unary_backward(UnOp op, DT dt, void* dx, const void* g, const void* x, const void* y,
                    int64_t n, double p0 = 0, double p1 = 0);
// out[i] = cond[i] ? a[i] : b[i] over st (operand 0 out, 1 a, 2 b) with cond (Bool) strided by
// cond_stride/cond_offset; a, b, out of type dt (any DT). masked_fill is where(mask, value, x)
// with a broadcast one-element a.
void where(DT dt, void* out, const bool* cond, const int64_t* cond_stride, int64_t cond_offset,
           const void* a, const void* b, const Strided& st);
// logical_not for Bool.
void logical_not(bool* out, const bool* x, int64_t n);

// ---- memory-shaped ops (cuda/copy.cu) ----
// out[i] = value (converted to dt) for i < n.
void fill(DT dt, void* out, int64_t n, double value);
// Type conversion (any pair; to Bool means != 0): out[i] = to(x[i]).
void cast(DT from, DT to, void* out, const void* x, int64_t n);
// Gather copy over st: out (operand 0 strides) = x (operand 1 strides), same dt. Transpose,
// permute, expand, narrow/slice and each input of cat are one call.
void strided_copy(DT dt, void* out, const void* x, const Strided& st);
// out (outer, n_idx, inner) = x (outer, n_src, inner) picked at idx[k] along the middle dim.
// idx are already checked to lie in [0, n_src).
void index_select(DT dt, void* out, const void* x, const int64_t* idx, int64_t outer, int64_t n_src,
                  int64_t n_idx, int64_t inner);
// dx (outer, n_src, inner) += g (outer, n_idx, inner) scattered at idx along the middle dim.
// dx must be zeroed by the caller. deterministic: a fixed summation order (sorted by index,
// then by position) instead of atomics.
void index_add(DT dt, void* dx, const void* g, const int64_t* idx, int64_t outer, int64_t n_src,
               int64_t n_idx, int64_t inner, bool deterministic);
// The first k (in order) with idx[k] outside [lo, hi) — as a host value; -1 when all are inside.
// Synchronises (it reads back one int64).
int64_t first_out_of_range(const int64_t* idx, int64_t n, int64_t lo, int64_t hi);

// ---- reductions (cuda/reduce.cu); CPU twins in ops/reduce/cpu/reduce.cpp ----
// x is seen as (outer, r, inner): output (o, i) reduces x[o, 0 .. r, i]; out is (outer, inner).
// Float sums accumulate in double (as on the CPU) in an order fixed by the shape alone, so a run
// repeats bit for bit; Int64 sums in int64; Bool is rejected (cast to I64 first).
// out = Σ_r x / divisor (mean: divisor = r), rounded once; int64 ignores divisor; r == 0 gives 0.
void reduce_sum(DT dt, void* out, const void* x, int64_t outer, int64_t r, int64_t inner,
                double divisor);
// dx (outer, r, inner) = dout (outer, inner)·scale, the product in double. F32/F64.
void reduce_sum_backward(DT dt, void* dx, const void* dout, int64_t outer, int64_t r, int64_t inner,
                         double scale);
// out = max (RedOp::Max) or min (RedOp::Min) over r >= 1; NaN propagates. F32/F64/I64.
void reduce_extreme(RedOp op, DT dt, void* out, const void* x, int64_t outer, int64_t r,
                    int64_t inner);
// dx = dout / ties where x equals m (the forward output; ties share the gradient evenly), else 0.
void reduce_extreme_backward(DT dt, void* dx, const void* dout, const void* x, const void* m,
                             int64_t outer, int64_t r, int64_t inner);
// out = Σ_r (x - mean)² / denom and mean (outer, inner) float64 = Σ_r x / r (saved for
// backward), both in double. F32/F64.
void reduce_var(DT dt, void* out, double* mean, const void* x, int64_t outer, int64_t r,
                int64_t inner, double denom);
// dx = dout·2(x - mean)/denom, in double. F32/F64.
void reduce_var_backward(DT dt, void* dx, const void* dout, const void* x, const double* mean,
                         int64_t outer, int64_t r, int64_t inner, double denom);
// out (outer, inner) int64 = index of the first maximum along r (NaN counts as maximal, the first
// NaN wins), like torch.argmax.
void argmax(DT dt, int64_t* out, const void* x, int64_t outer, int64_t r, int64_t inner);
// *acc += Σ x[i]² over i < n, accumulated in double; acc is one device double, zeroed by the
// caller. For gradient-norm clipping: many tensors
// add into one accumulator, then one read.
void sum_squares(DT dt, double* acc, const void* x, int64_t n);

// ---- matmul (cuda/blas.cu, cuBLAS) ----
// Row-major batched GEMM: for b < batch, C_b = alpha·op(A_b)·op(B_b) + beta·C_b with op(A_b)
// (M, K), op(B_b) (K, N), C_b (M, N); A_b = A + b·strideA (elements), lda etc. are the row-major
// leading dimensions (row lengths) of the stored matrices. transA: A is stored (K, M). One
// cublasGemmStridedBatchedEx (F32: TF32 only when allow_tf32()); F64 uses cublasDgemm paths.
void gemm(DT dt, bool transA, bool transB, int64_t M, int64_t N, int64_t K, double alpha,
          const void* A, int64_t lda, int64_t strideA, const void* B, int64_t ldb, int64_t strideB,
          double beta, void* C, int64_t ldc, int64_t strideC, int64_t batch);
// TF32 tensor cores for float32 GEMMs: off by default (results match the CPU to float32
// rounding); on trades about 1e-3 relative error for speed.
void set_allow_tf32(bool on);
bool allow_tf32();

// ---- softmax (cuda/softmax.cu) ----
// y = softmax(x) (log: log_softmax) over the middle dim of (outer, r, inner). As on the CPU
// (ops/softmax/softmax.cpp): a row whose entries are all -inf gives 0 (log_softmax: -inf) and zero
// gradient; a row holding a NaN gives NaN.
void softmax_forward(DT dt, void* y, const void* x, int64_t outer, int64_t r, int64_t inner,
                     bool log);
// softmax:     dx = y ⊙ (g − Σ g⊙y);   log_softmax: dx = g − exp(y)·Σ g.
void softmax_backward(DT dt, void* dx, const void* g, const void* y, int64_t outer, int64_t r,
                      int64_t inner, bool log);

// ---- layer norm (cuda/norm.cu) ----
// x (N, D) -> y (N, D); mean and rstd (N) float64 (saved for backward); w, b (D) or null.
// Statistics are computed in double (two passes), as the CPU does.
void layer_norm_forward(DT dt, void* y, double* mean, double* rstd, const void* x, const void* w,
                        const void* b, int64_t N, int64_t D, double eps);
// dx (N, D); dw, db (D) or null (written, not accumulated); reads dy, x, w (or null), mean, rstd.
// dw/db sums run in a fixed order (deterministic).
void layer_norm_backward(DT dt, void* dx, void* dw, void* db, const void* dy, const void* x,
                         const void* w, const double* mean, const double* rstd, int64_t N,
                         int64_t D);
// RMSNorm (cuda/norm.cu): y = x·rstd·w, rstd = 1/sqrt(mean(x²) + eps) per row (saved); w (D) or
// null. Backward: dx (N, D) and dw (D) or null, from dy, x, w, rstd.
void rms_norm_forward(DT dt, void* y, double* rstd, const void* x, const void* w, int64_t N,
                      int64_t D, double eps);
void rms_norm_backward(DT dt, void* dx, void* dw, const void* dy, const void* x, const void* w,
                       const double* rstd, int64_t N, int64_t D);

// ---- rotary position embeddings (cuda/rotary.cu) ----
// out, x (outer, T, inner, D): the first R dims of each row at position t rotated in pairs by
// cos, sin (T, R/2) (half-split pairs (i, i + R/2), or (2i, 2i+1) interleaved); the rest copied.
// inverse: by −θ (the backward).
void rotary(DT dt, void* out, const void* x, const void* cos, const void* sin, int64_t outer,
            int64_t T, int64_t inner, int64_t D, int64_t R, bool interleaved, bool inverse);

// ---- scatter and scatter_reduce (cuda/scatter.cu) ----
// out (holding x) += / *= / max / min / = src at index along dim; st: shape = index's, stride 0 =
// out's, 1 = src's (index contiguous). count: out-sized int64 scratch, zeroed, for mean.
void scatter_reduce(ScatterOp op, DT dt, void* out, const void* src, const int64_t* index,
                    const Strided& st, int dim, bool include_self, int64_t* count,
                    int64_t out_numel);

// ---- running scans and the product along one dim (cuda/scan.cu) ----
// x (outer, n, inner); y of x's shape, (outer, inner) for Prod; idx (cummax / cummin) int64 of
// y's shape. The backward reads x, y and idx as each op needs them.
void scan_forward(ScanOp op, DT dt, void* y, int64_t* idx, const void* x, int64_t outer, int64_t n,
                  int64_t inner);
void scan_backward(ScanOp op, DT dt, void* dx, const void* g, const void* x, const void* y,
                   const int64_t* idx, int64_t outer, int64_t n, int64_t inner);

// ---- cross-entropy fused with log-softmax (cuda/loss.cu) ----
// logits (N, C, inner) (inner = 1 for (N, C)), target (N, inner) int64 already checked to lie in
// [0, C) or equal ignore_index. Per row r = n·inner + i: loss[r] (float64) and lse[r] (float64,
// saved); ignored rows get 0 and 0. *count_host = number of rows not ignored (synchronises).
void cross_entropy_forward(DT dt, double* loss, double* lse, const void* logits,
                           const int64_t* target, int64_t N, int64_t C, int64_t inner,
                           int64_t ignore_index, double label_smoothing, int64_t* count_host);
// dlogits (N, C, inner) = grow[r]·(softmax − smoothed one-hot), with grow (N·inner) float64 per
// row, or grow == null and every row gets grow_scalar; ignored rows get 0.
void cross_entropy_backward(DT dt, void* dlogits, const double* grow, double grow_scalar,
                            const void* logits, const int64_t* target, const double* lse, int64_t N,
                            int64_t C, int64_t inner, int64_t ignore_index, double label_smoothing);

// ---- dropout (cuda/dropout.cu) ----
// Counter-based RNG (Philox-4x32-10 keyed by seed, counter = element index + offset): keep[i] =
// (u(i) >= p) ? 1/(1-p) : 0, out[i] = x[i]·keep[i]. The same (seed, offset) always gives the same
// mask, on any launch configuration.
void dropout_forward(DT dt, void* out, void* keep, const void* x, int64_t n, double p,
                     uint64_t seed, uint64_t offset);
// The uniform in [0, 1) that element i draws: u = w · 2⁻³², with w the first 32-bit word of
// Philox-4x32-10(key = seed, counter = (offset + i) as 64 bits in words 0-1, 0, 0); element i is
// kept iff u >= p. Host twin of the device function, for tests.
double dropout_uniform_host(uint64_t seed, uint64_t offset, int64_t i);

// ---- optimizers (cuda/optim.cu) ----
// One fused Adam / AdamW step on n elements, in place, in ops/optim/cpu/optim.cpp's order (PyTorch
// 1.13's _single_tensor_adam): g = −g if maximize; (decoupled: p *= 1 − lr·wd first, AdamW; else
// g += wd·p, Adam's L2) m = b1·m + (1−b1)·g; v = b2·v + (1−b2)·g²; with vmax (amsgrad, or null)
// vmax = max(vmax, v) and v̂ = vmax, else v̂ = v; p += (−lr/bc1)·m / (sqrt(v̂)/sqrt(bc2) + eps),
// where bc1 = 1 − b1^t, bc2 = 1 − b2^t. Arithmetic in double per element, storage in dt (the CPU
// computes float32 params in float32: about 1 ulp apart).
void adam_step(DT dt, void* p, const void* g, void* m, void* v, void* vmax, int64_t n, double lr,
               double b1, double b2, double eps, double weight_decay, bool decoupled, bool maximize,
               double bc1, double bc2);

// ---- nonzero (cuda/nonzero.cu) ----
// The true entries of the contiguous bool mask (n): nonzero_count fills offsets (nonzero_chunks(n)
// + 1 int64 on the device: each chunk's first output row, then the total) and returns the total
// (read back: it waits); nonzero_write then writes out (total, st.ndim) int64, each entry's
// coordinates in st.shape, row-major order.
int64_t nonzero_count(const bool* mask, int64_t n, int64_t* offsets);
void nonzero_write(int64_t* out, const bool* mask, int64_t n, const int64_t* offsets,
                   const Strided& st);

// ---- attention (cuda/attention.cu; the mask description: ops/kern/kernel_codes.hpp) ----
// Fused attention forward (FlashAttention-2 style: tiles of queries per block, online softmax
// over key tiles, tiles entirely outside the structural range skipped). The operands are laid
// out as d says (kern::AttentionLayout: (B, NH, T, hs), heads last, packed qkv or packed kv; the
// same layouts as the CPU's, read in place):
// q (B, NH, T, hs), k (B, NH, S, hs), v (B, NH, S, hs_v) -> o (B, NH, T, hs_v) and lse (B, NH, T,
// always heads first) float32 for F32 / float64 for F64 (log-sum-exp of the scaled, masked scores;
// -inf for a fully masked row, whose output is 0). Supported head sizes: hs, hs_v <= 128.
void attention_forward(DT dt, void* o, void* lse, const void* q, const void* k, const void* v,
                       const AttentionLayout& d, double scale, const MaskDesc& mask);
// Backward from o, lse and dout (o's layout): dq, dk, dv in q's, k's and v's layouts (one tensor
// when packed: dq, dk and dv then point at it), all written (not accumulated). Fully masked rows
// send zero gradient. With position biases (mask.rel, mask.alibi), d_rel (B, NH, rel_n) and
// d_alibi (B, NH), float64, are written when not null: Σ dS over each bucket's entries and
// Σ -|i' - j|·dS per head, from dS summed per diagonal (O(T + S) scratch per head).
// Deterministic (no atomics).
void attention_backward(DT dt, void* dq, void* dk, void* dv, double* d_rel, double* d_alibi,
                        const void* dout, const void* q, const void* k, const void* v,
                        const void* o, const void* lse, const AttentionLayout& d, double scale,
                        const MaskDesc& mask);

}  // namespace tg::cuda
