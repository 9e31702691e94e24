// ops/core/cpu/kernels.hpp — the plain C++ face of tapegrad's CPU kernels (ops/<family>/cpu/*.cpp): raw
// pointers, sizes and the op codes of ops/kern/kernel_codes.hpp, so both backends of an op read one
// table of codes and the op families (ops/<family>/*.cpp) dispatch with one switch. No xtensor here: it
// stays in the kernel translation units. ops/ checks every argument and shape first; these trust
// them.
//
// Conventions, as in cuda/kernels.cuh (which documents each kernel of the list): outputs, inputs,
// saved buffers, sizes, options; every pointer contiguous row-major unless strides say otherwise; T
// is float or double unless stated. float32 computes in float32 with vectorised math (xsimd), as
// PyTorch does; sums over long rows accumulate in double. These kernels are the specification the
// CUDA kernels are tested against. Shape vocabulary: N rows, D a trailing size, (outer, r, inner) a
// tensor seen around one dim.
#pragma once

#include "autograd/tensor.hpp"
#include "ops/kern/kernel_codes.hpp"

#include <cstdint>
#include <string>

namespace tg::cpu {

using kern::BinOp;
using kern::DT;
using kern::RedOp;
using kern::ScanOp;
using kern::ScatterOp;
using kern::Strided;
using kern::UnOp;

// ---- the raw face: the CUDA kernels' signatures (ops/kern/kernel_list.inc) ----
// One function per line of the list, dt a float dtype (the caller checked it): the dtype dispatch
// to the typed kernels below happens inside each family's cpu/ file. ops/core/kernels.cpp calls these for CPU tensors.
#define TG_KERNEL(name, params, args) void name params;
#define TG_CUDA_KERNEL(ret, name, params, args)
#include "ops/kern/kernel_list.inc"
#undef TG_CUDA_KERNEL
#undef TG_KERNEL

// ---- elementwise (ops/unary/cpu/unary.cpp, ops/binary/cpu/binary.cpp) ----
// out[i] = f(x[i]) for i < n, f as documented for kern::UnOp (p0, p1 its scalar parameters).
template <typename T>
void unary(UnOp op, T* out, const T* x, int64_t n, double p0 = 0, double p1 = 0);
// dx[i] = g[i] · f'(x[i]) where y = f(x); the same reads as cuda::unary_backward (x or y may be
// null when the op does not read it).
template <typename T>
void unary_backward(UnOp op, T* dx, const T* g, const T* x, const T* y, int64_t n, double p0 = 0,
                    double p1 = 0);

// ---- broadcasting binary ops, comparisons, where (ops/binary/cpu/binary.cpp) ----
// out (so) = a (sa) op b (sb), NumPy broadcasting (so is the broadcast shape). T: float, double,
// int64_t (arithmetic; no Div/Pow for int64) or bool (comparisons only); O: T for arithmetic,
// bool for comparisons. Max/Min propagate NaN like torch.maximum.
template <typename T, typename O>
void binary(BinOp op, O* out, const T* a, const T* b, const Shape& so, const Shape& sa,
            const Shape& sb);
// out (so) = cond (sc) ? a (sa) : b (sb), all broadcast to so; T any of float, double, int64_t,
// bool. masked_fill is where(mask, value, x) with a one-element value.
template <typename T>
void where(T* out, const bool* cond, const T* a, const T* b, const Shape& so, const Shape& sc,
           const Shape& sa, const Shape& sb);

// ---- reductions: sum/mean/var/max/min/argmax (ops/reduce/cpu/reduce.cpp) ----
// x is seen as (outer, r, inner): output (o, i) reduces x[o, 0 .. r, i]; out is (outer, inner).
// T is float, double or int64_t for the forward kernels, float or double for the backward ones.
// Results do not depend on the thread count.
//
// out = Σ_r x / divisor (mean: divisor = r). Floating T accumulates in double and rounds once;
// int64 sums in int64 (divisor unused). r == 0 gives 0 / divisor.
template <typename T>
void reduce_sum(T* out, const T* x, int64_t outer, int64_t r, int64_t inner, double divisor = 1);
// out = max (RedOp::Max) or min (RedOp::Min) over r >= 1; NaN propagates.
template <typename T>
void reduce_extreme(RedOp op, T* out, const T* x, int64_t outer, int64_t r, int64_t inner);
// out int64 = the first index of the maximum over r >= 1 (NaN counts as the maximum: the first NaN
// wins), like torch.argmax.
template <typename T>
void argmax(int64_t* out, const T* x, int64_t outer, int64_t r, int64_t inner);
// out = Σ_r (x - mean)² / denom, and mean (outer, inner) float64 = Σ_r x / r (saved for backward),
// both accumulated in double.
template <typename T>
void reduce_var(T* out, double* mean, const T* x, int64_t outer, int64_t r, int64_t inner,
                double denom);
// Backward spreads, dx (outer, r, inner) from dout (outer, inner):
// dx = dout·scale (sum: 1, mean: 1/r), the product in double.
template <typename T>
void reduce_sum_backward(T* dx, const T* dout, int64_t outer, int64_t r, int64_t inner,
                         double scale = 1);
// dx = dout / ties where x equals m (the forward max/min output, ties share it evenly), else 0.
template <typename T>
void reduce_extreme_backward(T* dx, const T* dout, const T* x, const T* m, int64_t outer, int64_t r,
                             int64_t inner);
// dx = dout·2(x - mean)/denom, in double.
template <typename T>
void reduce_var_backward(T* dx, const T* dout, const T* x, const double* mean, int64_t outer,
                         int64_t r, int64_t inner, double denom);

// ---- the instruction set of the hand-written kernels (ops/core/cpu/isa.hpp, isa.cpp) ----
// Four families have an AVX-512 variant beside the build's own (AVX2 + FMA by default): the row
// softmax, the float32 unary family, the fused attention's float32 products (else OpenBLAS), the
// column sums of the reductions over a leading dim (the same bits on both). Each
// family runs AVX-512 where the build compiled it, the CPU has AVX-512 F/CD/DQ/BW/VL and the
// preference list (isa.cpp, from bench/run.sh's variant rows on that CPU model) does not say the
// build's own is faster there. simd_kernels() names the choice ("avx512" when every family runs
// AVX-512, the build's name ("fma3+avx2") when none does, else "avx512 (attention: fma3+avx2)");
// kernel_choice() also names the CPU model and whether the choice was measured on it.
// set_simd_kernels(false) makes every later call use the build's own, set_simd_kernels(true)
// AVX-512 wherever possible (tests of each variant), reset_simd_kernels() the per-CPU choice again;
// set_kernel_variant switches one family. Each returns whether the level asked for is in use.
enum class KernelFamily { Softmax, Unary, Attention, Reduce };
bool simd_avx512();
const char* simd_kernels();
std::string kernel_choice();
bool set_simd_kernels(bool avx512);
bool set_kernel_variant(KernelFamily family, bool avx512);
void reset_simd_kernels();
// Whether the instruction-set table in use has the attention's packed float32 products (the two
// below; ops/attention/cpu/gemm_avx512.cpp), which ops/attention/cpu/fused.cpp then uses instead of OpenBLAS.
bool attention_packed_products();
// The attention's float32 GEMM (ops/attention/cpu/gemm_avx512.cpp), only while
// attention_packed_products():
// C (M, N) = alpha·Σ_k A(m, k)·B(k, n) (+ C when acc), A(m, k) at A[m·am + k·ak] (am = 1 reads A
// transposed), B's row k contiguous at B + k·ldb, C's rows ldc apart. bpack (K × 64 floats) and
// apack (M rounded up to 6, times K), each optional, let it copy operands that it would otherwise
// read with long strides: panels of B whose rows lie far apart, A read down its columns. keys (a
// key mask row, 0 allowed and -inf blocked), optional: C[·][n] = keys[n] where it is not 0 (a
// select: a NaN or inf score of a blocked key leaves no trace).
void attention_gemm_f32(int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t am,
                        int64_t ak, const float* B, int64_t ldb, bool acc, float* C, int64_t ldc,
                        float* bpack = nullptr, float* apack = nullptr,
                        const float* keys = nullptr);
// dst (cols, rows) with rows ldd apart = src (rows, cols) with rows lds apart, transposed.
void attention_transpose_f32(int64_t rows, int64_t cols, const float* src, int64_t lds, float* dst,
                             int64_t ldd);

// ---- row softmax / log_softmax with the fully-masked/NaN rule, shared by softmax and SDPA
// (ops/softmax/cpu/softmax.cpp) ----
// The rule, coded once here for the CPU (cuda/softmax.cu and cuda/attention.cu mirror it): a row
// whose entries are all -inf (a fully masked attention row) gives 0 (log_softmax: -inf) and a zero
// gradient; a row holding a NaN gives NaN everywhere (the max skips NaN, so without the check an
// all NaN/-inf row would pass for fully masked); otherwise y = exp(x - max) / sum exp(x - max),
// exponentials in T's precision (float32 math for float32, as PyTorch), the sum in double.
// One contiguous row of n: y = softmax(x) (log_softmax when is_log); y may be x. Returns false for
// a fully masked row (all -inf), true otherwise (NaN rows included).
template <typename T>
bool softmax_row(T* y, const T* x, int64_t n, bool is_log = false);
// Backward of one contiguous row from the upstream g and the saved output y; dx may be g.
// softmax: dx = y ⊙ (g − Σ g⊙y); log_softmax: dx = g − exp(y)·Σ g, and 0 on a fully masked row.
template <typename T>
void softmax_backward_row(T* dx, const T* g, const T* y, int64_t n, bool is_log = false);
// The rows run on the instruction set of cpu::simd_kernels() (above).
// The same over an (outer, n, inner) tensor, softmax along n: element (o, j, i) at
// (o·n + j)·inner + i; inner == 1 is contiguous rows, else columns are gathered in blocks.
template <typename T>
void softmax_forward(T* y, const T* x, int64_t outer, int64_t n, int64_t inner, bool is_log);
template <typename T>
void softmax_backward(T* dx, const T* g, const T* y, int64_t outer, int64_t n, int64_t inner,
                      bool is_log);

// ---- layer norm (ops/norm/cpu/norm.cpp) ----
// x (N, D) -> out (N, D); mean and rstd (N) float64, saved for backward; w, b (D) or null.
//   mean = Σx/D, var = Σ(x - mean)²/D (two passes, in double), rstd = 1/sqrt(var + eps),
//   out = (x - mean)·rstd·w + b (in T).
template <typename T>
void layer_norm_forward(T* out, double* mean, double* rstd, const T* x, const T* w, const T* b,
                        int64_t N, int64_t D, double eps);
// dx (N, D) or null; dw, db (D) or null, written (not accumulated); reads dout, x, w (or null),
// mean, rstd. With norm = (x - mean)·rstd and dnorm = dout·w:
//   dx = rstd·(dnorm - mean_D(dnorm) - norm·mean_D(dnorm·norm)), dw = Σ_N dout·norm, db = Σ_N dout
// (row means and Σ_N in double, in an order fixed by N and D).
template <typename T>
void layer_norm_backward(T* dx, T* dw, T* db, const T* dout, const T* x, const T* w,
                         const double* mean, const double* rstd, int64_t N, int64_t D);

// ---- cross-entropy (ops/loss/cpu/cross_entropy.cpp) ----
// logits (N, C, inner) (inner = 1 for (N, C)), target (N·inner) int64 already checked to lie in
// [0, C) or equal ignore_index. Per row r = n·inner + i, with lse = logsumexp_c(x) and
// ε = label_smoothing: loss[r] = (1-ε)·(lse - x_t) + ε/C·Σ_c(lse - x_c) and lse[r] (both float64,
// lse saved for backward); ignored rows get 0 and 0. Returns the number of rows not ignored.
template <typename T>
int64_t cross_entropy_forward(double* loss, double* lse, const T* logits, const int64_t* target,
                              int64_t N, int64_t C, int64_t inner, int64_t ignore_index,
                              double label_smoothing);
// dlogits (N, C, inner) = g_r·(softmax - (1-ε)·onehot(t) - ε/C), g_r = grow[r] (float64 per row)
// or, when grow is null, grow_scalar for every row; ignored rows get 0.
template <typename T>
void cross_entropy_backward(T* dlogits, const double* grow, double grow_scalar, const T* logits,
                            const int64_t* target, const double* lse, int64_t N, int64_t C,
                            int64_t inner, int64_t ignore_index, double label_smoothing);

// ---- dropout, embedding (ops/random/cpu/dropout.cpp, ops/index/cpu/embedding.cpp) ----
// Inverted dropout on n elements: keep[i] = scale = 1/(1-p) when element i is kept, else 0, and
// out[i] = x[i]·keep[i]. Element i is kept iff its uniform (u >> 11)·2⁻⁵³ >= p, u the i-th of n
// draws from gen in row-major order (gen.next_u64s: the stream of n next_u64()). p == 1 drops
// everything and draws nothing.
template <typename T>
void dropout_forward(T* out, T* keep, const T* x, int64_t n, double p, Generator& gen);
// out (n, C) = weight (V, C) rows idx[k], idx already checked to lie in [0, V).
template <typename T>
void embedding_forward(T* out, const T* weight, const int64_t* idx, int64_t n, int64_t C);
// dweight (V, C, zeroed by the caller) += dout (n, C) row k into row idx[k], skipping
// idx[k] == pad (pass -1 for no padding row); each element sums in k order (deterministic).
template <typename T>
void embedding_backward(T* dweight, const T* dout, const int64_t* idx, int64_t n, int64_t C,
                        int64_t pad);

// ---- GEMM through xt::blas::gemm (ops/matmul/cpu/blas.cpp) ----
// C (M, N) = alpha·op(A)·op(B) + beta·C, every matrix row-major with the given leading dimension
// (the stored row length: A is (M, K), or (K, M) when ta, with rows lda apart; B is (K, N), or
// (N, K) when tb; C rows ldc apart, ld >= the stored row length). No copy, no allocation: BLAS
// reads the buffers themselves. M or N == 0: nothing; K == 0: C = beta·C (0 when beta == 0, even
// over NaN). beta == 0 never reads C. Sizes and leading dimensions must fit BLAS's int: callers
// check (with their own op's message).
template <typename T>
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t lda,
          const T* B, int64_t ldb, T beta, T* C, int64_t ldc);
// While one lives, OpenBLAS runs every GEMM on the calling thread: made (on one thread) before
// a parallel loop of ours that calls gemm from each of its threads, so the two pools never run at
// once (the attention's heads). Nests; gemm leaves the pool's size alone meanwhile.
class SerialBlas {
 public:
  SerialBlas();
  ~SerialBlas();
  SerialBlas(const SerialBlas&) = delete;
  SerialBlas& operator=(const SerialBlas&) = delete;
};

// ---- copies: cat/stack/split, permutes (ops/shape/cpu/copy.cpp) ----
// out[Σ i_d·out_strides[d]] = x[Σ i_d·x_strides[d]] for every index i of `shape` (element
// strides, 0 where x is broadcast; the pointers already at their offsets). T: float, double,
// int64_t, bool. The gather of transpose/permute/expand/narrow and the scatter of their backward.
template <typename T>
void strided_copy(T* out, const Shape& out_strides, const T* x, const Shape& x_strides,
                  const Shape& shape);

// ---- indexing and sampling (ops/index/cpu/indexing.cpp) ----
// Along one dim of a rank-n tensor, index (index_shape, contiguous int64, values already checked
// to lie in range) picks positions. For every element e of index, with multi-index i:
//   gather:       out[o] = x[a + index[e]·x_strides[dim]]
//   scatter_add:  out[a + index[e]·out_strides[dim]] += src[o]
// where a = Σ_{d != dim} i_d·(x or out)_strides[d] and o = Σ_d i_d·(out or src)_strides[d].
// scatter_add's out holds x already; repeated targets sum in the index's row-major order.
// gather: T any of float, double, int64_t, bool; scatter_add: float, double, int64_t.
template <typename T>
void gather(T* out, const Shape& out_strides, const T* x, const Shape& x_strides,
            const int64_t* index, const Shape& index_shape, int64_t dim);
template <typename T>
void scatter_add(T* out, const Shape& out_strides, const T* src, const Shape& src_strides,
                 const int64_t* index, const Shape& index_shape, int64_t dim);
// scatter (None: the last write in the index's row-major order wins) and scatter_reduce: out
// holds x; without include_self the targets start from the reduction's identity; a NaN wins
// amax / amin; mean divides by the contributions (x included with include_self). T float, double.
// The table's scatter_reduce (ops/kern/kernel_list.inc) calls it with st: shape = index's, stride 0
// = out's, 1 = src's (src read at the index's positions).
template <typename T>
void scatter_reduce_lines(T* out, const Shape& out_strides, const T* src, const Shape& src_strides,
                          const int64_t* index, const Shape& index_shape, int64_t dim, ScatterOp r,
                          bool include_self, int64_t out_numel);
// x (outer, n, inner) sorted along n: values and indices (outer, k, inner) hold the first k of
// the order (ascending, or descending) in which NaN is the largest value and ties keep the lower
// index first (what a stable sort gives). sorted = false: the same k in increasing index order.
// T any of float, double, int64_t, bool.
template <typename T>
void sort_rows(T* values, int64_t* indices, const T* x, int64_t outer, int64_t n, int64_t inner,
               int64_t k, bool descending, bool sorted);
// out (outer, n, inner) = running sum of x along n (reverse: from the end, out_j = Σ_{j' >= j}
// x_j'), accumulated in double for float T (rounded per element, like PyTorch) and in int64 for
// int64_t and bool T (O = int64_t).
template <typename T, typename O>
void cumsum(O* out, const T* x, int64_t outer, int64_t n, int64_t inner, bool reverse);
// Running products and extremes along n of (outer, n, inner) lines (ops/reduce/cpu/scan.cpp), T float
// or double, accumulated in double: cumprod (backward exact with zeros), prod (y (outer, inner);
// backward by prefix and suffix products), cummax / cummin (values and int64 indices; NaN stays,
// ties take the later index; backward sums g into the indices), logcumsumexp (stable).
template <typename T>
void cumprod_forward(T* y, const T* x, int64_t outer, int64_t n, int64_t inner);
template <typename T>
void cumprod_backward(T* dx, const T* g, const T* x, const T* y, int64_t outer, int64_t n,
                      int64_t inner);
template <typename T>
void prod_forward(T* y, const T* x, int64_t outer, int64_t n, int64_t inner);
template <typename T>
void prod_backward(T* dx, const T* g, const T* x, int64_t outer, int64_t n, int64_t inner);
template <typename T>
void cumext_forward(T* y, int64_t* idx, const T* x, int64_t outer, int64_t n, int64_t inner,
                    bool max);
template <typename T>
void cumext_backward(T* dx, const T* g, const int64_t* idx, int64_t outer, int64_t n,
                     int64_t inner);
template <typename T>
void logcumsumexp_forward(T* y, const T* x, int64_t outer, int64_t n, int64_t inner);
template <typename T>
void logcumsumexp_backward(T* dx, const T* g, const T* x, const T* y, int64_t outer, int64_t n,
                           int64_t inner);
// out (B, N, C) = x where the column c and row r satisfy c - r <= diagonal (lower: tril) or
// c - r >= diagonal (upper: triu), else 0. T any of float, double, int64_t, bool.
template <typename T>
void triangle(T* out, const T* x, int64_t B, int64_t N, int64_t C, int64_t diagonal, bool lower);
// out (N, k) int64: k categories per row of probs (N, C), already checked finite, >= 0, with a
// positive entry in each row and, without replacement, at least k positive entries. Rows draw in
// order from gen: with replacement k uniforms (inverse CDF in double); without, C uniforms (one
// per category: the exponential race, keys E_c / p_c, the k smallest in increasing order).
template <typename T>
void multinomial(int64_t* out, const T* probs, int64_t N, int64_t C, int64_t k, bool replacement,
                 Generator& gen);

}  // namespace tg::cpu
