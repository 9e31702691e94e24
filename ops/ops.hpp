// ops/ops.hpp — every differentiable op of tapegrad, by family. Names and semantics follow
// PyTorch so a snippet ports line by line. Each family is a folder of ops/ holding its ops with
// their backward and second order side by side, and its CPU kernels in cpu/ beside them:
//   unary/      sin … sign, exp, log, tanh, sigmoid, relu, the activations (silu, softplus, elu,
//               hardswish, …): one list entry and one formula pair each (ops/kern/unary_list.inc)
//   binary/     arithmetic with NumPy broadcasting and the C++ operators, comparisons, where and
//               masked_fill, fmod … logaddexp, isclose, logical and bitwise ops
//   reduce/     sum, mean, max, min, var, std, std_mean, argmax, argmin, logsumexp, all, any,
//               isnan/isinf/isfinite; prod and the running scans (cumsum, cumprod, cummax, …)
//   matmul/     matmul, mm, bmm, linear (BLAS), einsum
//   shape/      the views (reshape/view, transpose, permute, squeeze, expand, narrow, select,
//               diagonal, unfold), cat/stack/split, flip/roll/repeat/pad, rearrange, diag, nonzero
//   index/      x.index({...}) and index_put, index_select, gather, scatter(_add, _reduce), sort,
//               topk, tril/triu, one_hot, multinomial, embedding
//   inplace/    in-place writes under the version counter: add_, mul_, fill_, copy_, ...
//   softmax/    softmax, log_softmax, softmin
//   norm/       layer_norm, rms_norm
//   loss/       cross_entropy; mse, l1, smooth_l1, huber, BCE (+ logits), nll, kl_div,
//               cosine_similarity, normalize
//   rotary/     apply_rotary (rotary position embeddings)
//   random/     dropout
//   attention/  scaled_dot_product_attention (+ packed forms), attention, additive_attention
//               and AttentionMask: declared in ops/attention/attention.hpp
//   functional/ tg::func (vjp … hessian) and gradgradcheck: ops/functional/functional.hpp
//   optim/      the fused Adam step and the sums nn/'s optimizers and clipping run (internal)
//   core/       what every family shares: argument checks, the backend dispatch, the CPU table
// // Shape vocabulary in comments: B batch, T/S query/key length, C channels, NH heads, hs head
// size, V vocab, N rows, D any trailing dims. Every op throws tg::Error naming the op, the argument
// and every shape when given bad input.
#pragma once

#include "autograd/tensor.hpp"
#include "ops/index/index.hpp"  // TensorIndex, x.index({...})

#include <array>
#include <utility>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace tg {

// ---- elementwise (broadcasting) ----
Tensor add(const Tensor& a, const Tensor& b, Site site = Site::here());
Tensor sub(const Tensor& a, const Tensor& b, Site site = Site::here());
Tensor mul(const Tensor& a, const Tensor& b, Site site = Site::here());
Tensor div(const Tensor& a, const Tensor& b, Site site = Site::here());
Tensor pow(const Tensor& a, const Tensor& b,
           Site site = Site::here());  // a > 0 where b is differentiated
Tensor maximum(const Tensor& a, const Tensor& b, Site site = Site::here());
Tensor minimum(const Tensor& a, const Tensor& b, Site site = Site::here());
Tensor add(const Tensor& a, double b, Site site = Site::here());
Tensor sub(const Tensor& a, double b, Site site = Site::here());
Tensor rsub(double a, const Tensor& b, Site site = Site::here());  // a - b
Tensor mul(const Tensor& a, double b, Site site = Site::here());
Tensor div(const Tensor& a, double b, Site site = Site::here());
Tensor rdiv(double a, const Tensor& b, Site site = Site::here());  // a / b
Tensor pow(const Tensor& a, double exponent, Site site = Site::here());
Tensor neg(const Tensor& a, Site site = Site::here());
Tensor exp(const Tensor& a, Site site = Site::here());
Tensor log(const Tensor& a, Site site = Site::here());
Tensor sqrt(const Tensor& a, Site site = Site::here());
Tensor rsqrt(const Tensor& a, Site site = Site::here());
Tensor abs(const Tensor& a, Site site = Site::here());
Tensor tanh(const Tensor& a, Site site = Site::here());
Tensor sigmoid(const Tensor& a, Site site = Site::here());
Tensor relu(const Tensor& a, Site site = Site::here());
Tensor gelu(const Tensor& a, const std::string& approximate = "none",
            Site site = Site::here());  // "none" (erf) | "tanh"
Tensor clamp(const Tensor& a, double min, double max, Site site = Site::here());
Tensor clamp_min(const Tensor& a, double min, Site site = Site::here());
Tensor clamp_max(const Tensor& a, double max, Site site = Site::here());
// Math (unary/): floating inputs; floor, ceil, round (half to even), trunc and sign have
// a zero gradient, sign(±0) = sign(NaN) = 0 as in PyTorch.
Tensor sin(const Tensor& a, Site site = Site::here());
Tensor cos(const Tensor& a, Site site = Site::here());
Tensor tan(const Tensor& a, Site site = Site::here());
Tensor asin(const Tensor& a, Site site = Site::here());
Tensor acos(const Tensor& a, Site site = Site::here());
Tensor atan(const Tensor& a, Site site = Site::here());
Tensor sinh(const Tensor& a, Site site = Site::here());
Tensor cosh(const Tensor& a, Site site = Site::here());
Tensor asinh(const Tensor& a, Site site = Site::here());
Tensor acosh(const Tensor& a, Site site = Site::here());
Tensor atanh(const Tensor& a, Site site = Site::here());
Tensor erf(const Tensor& a, Site site = Site::here());
Tensor erfc(const Tensor& a, Site site = Site::here());
Tensor exp2(const Tensor& a, Site site = Site::here());
Tensor expm1(const Tensor& a, Site site = Site::here());
Tensor log2(const Tensor& a, Site site = Site::here());
Tensor log10(const Tensor& a, Site site = Site::here());
Tensor log1p(const Tensor& a, Site site = Site::here());
Tensor sinc(const Tensor& a, Site site = Site::here());  // sin(πx)/(πx), 1 at x = 0
Tensor floor(const Tensor& a, Site site = Site::here());
Tensor ceil(const Tensor& a, Site site = Site::here());
Tensor round(const Tensor& a, Site site = Site::here());
Tensor trunc(const Tensor& a, Site site = Site::here());
Tensor sign(const Tensor& a, Site site = Site::here());
// Activations (unary/), torch.nn.functional's names and defaults.
Tensor silu(const Tensor& a, Site site = Site::here());  // x·σ(x)
Tensor softplus(const Tensor& a, double beta = 1.0, double threshold = 20.0,
                Site site = Site::here());  // x where beta·x > threshold
Tensor leaky_relu(const Tensor& a, double negative_slope = 0.01, Site site = Site::here());
Tensor elu(const Tensor& a, double alpha = 1.0, Site site = Site::here());
Tensor selu(const Tensor& a, Site site = Site::here());
Tensor celu(const Tensor& a, double alpha = 1.0, Site site = Site::here());  // alpha != 0
Tensor mish(const Tensor& a, Site site = Site::here());
Tensor hardswish(const Tensor& a, Site site = Site::here());
Tensor hardsigmoid(const Tensor& a, Site site = Site::here());
Tensor hardtanh(const Tensor& a, double min_val = -1.0, double max_val = 1.0,
                Site site = Site::here());  // the gradient passes strictly inside (min, max)
Tensor relu6(const Tensor& a, Site site = Site::here());  // hardtanh(a, 0, 6)
Tensor logsigmoid(const Tensor& a, Site site = Site::here());
Tensor softsign(const Tensor& a, Site site = Site::here());
// a·σ(b) for the halves a, b of x along dim (its size must be even).
Tensor glu(const Tensor& a, int64_t dim = -1, Site site = Site::here());

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, double b);
Tensor operator-(const Tensor& a, double b);
Tensor operator*(const Tensor& a, double b);
Tensor operator/(const Tensor& a, double b);
Tensor operator+(double a, const Tensor& b);
Tensor operator-(double a, const Tensor& b);
Tensor operator*(double a, const Tensor& b);
Tensor operator/(double a, const Tensor& b);
// a & b, a | b, a ^ b, ~a, a << b, a >> b: the bitwise ops above (no clash: Tensor had none of
// these, and std::ostream << Tensor keeps its own overload). Integer numbers on either side.
Tensor operator&(const Tensor& a, const Tensor& b);
Tensor operator|(const Tensor& a, const Tensor& b);
Tensor operator^(const Tensor& a, const Tensor& b);
Tensor operator<<(const Tensor& a, const Tensor& b);
Tensor operator>>(const Tensor& a, const Tensor& b);
Tensor operator&(const Tensor& a, int64_t b);
Tensor operator|(const Tensor& a, int64_t b);
Tensor operator^(const Tensor& a, int64_t b);
Tensor operator<<(const Tensor& a, int64_t b);
Tensor operator>>(const Tensor& a, int64_t b);
Tensor operator&(int64_t a, const Tensor& b);
Tensor operator|(int64_t a, const Tensor& b);
Tensor operator^(int64_t a, const Tensor& b);
Tensor operator<<(int64_t a, const Tensor& b);
Tensor operator>>(int64_t a, const Tensor& b);
Tensor operator~(const Tensor& a);
template <typename D, std::enable_if_t<std::is_floating_point_v<D>, int> = 0>
Tensor operator&(const Tensor& a, D b) = delete;
template <typename D, std::enable_if_t<std::is_floating_point_v<D>, int> = 0>
Tensor operator&(D a, const Tensor& b) = delete;
template <typename D, std::enable_if_t<std::is_floating_point_v<D>, int> = 0>
Tensor operator|(const Tensor& a, D b) = delete;
template <typename D, std::enable_if_t<std::is_floating_point_v<D>, int> = 0>
Tensor operator|(D a, const Tensor& b) = delete;
template <typename D, std::enable_if_t<std::is_floating_point_v<D>, int> = 0>
Tensor operator^(const Tensor& a, D b) = delete;
template <typename D, std::enable_if_t<std::is_floating_point_v<D>, int> = 0>
Tensor operator^(D a, const Tensor& b) = delete;
template <typename D, std::enable_if_t<std::is_floating_point_v<D>, int> = 0>
Tensor operator<<(const Tensor& a, D b) = delete;
template <typename D, std::enable_if_t<std::is_floating_point_v<D>, int> = 0>
Tensor operator<<(D a, const Tensor& b) = delete;
template <typename D, std::enable_if_t<std::is_floating_point_v<D>, int> = 0>
Tensor operator>>(const Tensor& a, D b) = delete;
template <typename D, std::enable_if_t<std::is_floating_point_v<D>, int> = 0>
Tensor operator>>(D a, const Tensor& b) = delete;

// Broadcast shape of a and b (NumPy rules); throws naming op and both shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);
// Sums g over the broadcast dims so it has `shape` (the one generic unbroadcast).
Tensor sum_to(const Tensor& g, const Shape& shape);

// Binary math (binary/math.cpp), composed from the ops above, PyTorch's names and edge cases:
// fmod (the dividend's sign; d/dother = -trunc(input/other)), remainder (the divisor's sign,
// Python's %), copysign (other's sign bit: -0 counts), lerp (PyTorch's two-sided formula),
// logaddexp (stable; equal infinities give themselves), isclose (|a - b| <= atol + rtol·|b|; no
// gradient), logical_and / or / xor (nonzero is true; bool result).
Tensor fmod(const Tensor& a, const Tensor& b, Site site = Site::here());
Tensor fmod(const Tensor& a, double b, Site site = Site::here());
Tensor remainder(const Tensor& a, const Tensor& b, Site site = Site::here());
Tensor remainder(const Tensor& a, double b, Site site = Site::here());
// torch.div(input, other, rounding_mode=...): "floor" (Python's //) or "trunc" (toward zero).
// float32/float64 keep their dtype, with a zero gradient for both operands (PyTorch's);
// int64 stays int64, and a zero divisor raises ZeroDivisionError as PyTorch does. INT64_MIN / -1
// wraps to INT64_MIN (PyTorch 1.13 dies of SIGFPE there). True division is div(a, b), where
// int64 operands promote to the default float dtype.
Tensor div(const Tensor& a, const Tensor& b, const std::string& rounding_mode,
           Site site = Site::here());
// A plain number b: beside an int64 tensor, a b that holds an integer counts as a Python int
// (the result stays int64), any other (2.5, inf, NaN, 1e20) as a Python float (the tensor
// promotes to the default float dtype); so do fmod, remainder and pow with a number.
Tensor div(const Tensor& a, double b, const std::string& rounding_mode, Site site = Site::here());
// torch.floor_divide: div(a, b, "floor") (PyTorch 1.13 has no derivative for it: zeros here).
Tensor floor_divide(const Tensor& a, const Tensor& b, Site site = Site::here());
Tensor floor_divide(const Tensor& a, double b, Site site = Site::here());
Tensor copysign(const Tensor& a, const Tensor& b, Site site = Site::here());
Tensor copysign(const Tensor& a, double b, Site site = Site::here());
Tensor lerp(const Tensor& a, const Tensor& end, const Tensor& weight, Site site = Site::here());
Tensor lerp(const Tensor& a, const Tensor& end, double weight, Site site = Site::here());
Tensor logaddexp(const Tensor& a, const Tensor& b, Site site = Site::here());
Tensor isclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8,
               bool equal_nan = false, Site site = Site::here());
Tensor logical_and(const Tensor& a, const Tensor& b, Site site = Site::here());
Tensor logical_or(const Tensor& a, const Tensor& b, Site site = Site::here());
Tensor logical_xor(const Tensor& a, const Tensor& b, Site site = Site::here());

// ---- comparisons (bool result, no gradient) ----
Tensor eq(const Tensor& a, const Tensor& b, Site site = Site::here());
Tensor ne(const Tensor& a, const Tensor& b, Site site = Site::here());
Tensor lt(const Tensor& a, const Tensor& b, Site site = Site::here());
Tensor le(const Tensor& a, const Tensor& b, Site site = Site::here());
Tensor gt(const Tensor& a, const Tensor& b, Site site = Site::here());
Tensor ge(const Tensor& a, const Tensor& b, Site site = Site::here());
// With a plain number: x == 0, x > 0.5, eq(x, 3) (an int64 x meets a fraction in float64).
Tensor eq(const Tensor& a, double b, Site site = Site::here());
Tensor ne(const Tensor& a, double b, Site site = Site::here());
Tensor lt(const Tensor& a, double b, Site site = Site::here());
Tensor le(const Tensor& a, double b, Site site = Site::here());
Tensor gt(const Tensor& a, double b, Site site = Site::here());
Tensor ge(const Tensor& a, double b, Site site = Site::here());
Tensor operator==(const Tensor& a, double b);
Tensor operator!=(const Tensor& a, double b);
Tensor operator<(const Tensor& a, double b);
Tensor operator<=(const Tensor& a, double b);
Tensor operator>(const Tensor& a, double b);
Tensor operator>=(const Tensor& a, double b);
Tensor operator==(double a, const Tensor& b);
Tensor operator!=(double a, const Tensor& b);
Tensor operator<(double a, const Tensor& b);
Tensor operator<=(double a, const Tensor& b);
Tensor operator>(double a, const Tensor& b);
Tensor operator>=(double a, const Tensor& b);
Tensor logical_not(const Tensor& a, Site site = Site::here());

// ---- bitwise (binary/bitwise.cpp) ----
// torch.bitwise_and / _or / _xor / _not on int64 or bool (bool: logical and, or, xor, not),
// broadcasting; both operands of one dtype; floating inputs refused, naming op and dtype (as
// PyTorch). No gradient. The number forms take an integer: a bool tensor with a number computes
// in int64 (PyTorch's promotion of a Python int), and a floating number does not compile.
Tensor bitwise_and(const Tensor& a, const Tensor& b, Site site = Site::here());
Tensor bitwise_or(const Tensor& a, const Tensor& b, Site site = Site::here());
Tensor bitwise_xor(const Tensor& a, const Tensor& b, Site site = Site::here());
Tensor bitwise_and(const Tensor& a, int64_t b, Site site = Site::here());
Tensor bitwise_or(const Tensor& a, int64_t b, Site site = Site::here());
Tensor bitwise_xor(const Tensor& a, int64_t b, Site site = Site::here());
Tensor bitwise_not(const Tensor& a, Site site = Site::here());
// torch.bitwise_left_shift / bitwise_right_shift on int64 (bool refused, as PyTorch): a · 2^b
// wrapping, and the arithmetic shift (sign-filling). Shift counts outside [0, 63] shift every
// bit out (0, or -1 for a negative a with >>), later PyTorch's rule; 1.13 used the count mod 64.
Tensor bitwise_left_shift(const Tensor& a, const Tensor& b, Site site = Site::here());
Tensor bitwise_right_shift(const Tensor& a, const Tensor& b, Site site = Site::here());
Tensor bitwise_left_shift(const Tensor& a, int64_t b, Site site = Site::here());
Tensor bitwise_right_shift(const Tensor& a, int64_t b, Site site = Site::here());
// A floating number with a bitwise op is refused at compile time (PyTorch refuses it at run
// time), rather than converted to int64 without a word.
template <typename D, std::enable_if_t<std::is_floating_point_v<D>, int> = 0>
Tensor bitwise_and(const Tensor& a, D b, Site site = Site::here()) = delete;
template <typename D, std::enable_if_t<std::is_floating_point_v<D>, int> = 0>
Tensor bitwise_or(const Tensor& a, D b, Site site = Site::here()) = delete;
template <typename D, std::enable_if_t<std::is_floating_point_v<D>, int> = 0>
Tensor bitwise_xor(const Tensor& a, D b, Site site = Site::here()) = delete;
template <typename D, std::enable_if_t<std::is_floating_point_v<D>, int> = 0>
Tensor bitwise_left_shift(const Tensor& a, D b, Site site = Site::here()) = delete;
template <typename D, std::enable_if_t<std::is_floating_point_v<D>, int> = 0>
Tensor bitwise_right_shift(const Tensor& a, D b, Site site = Site::here()) = delete;

// ---- reductions (dims may be negative; empty dims = all) ----
Tensor sum(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false,
           Site site = Site::here());
Tensor mean(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false,
            Site site = Site::here());
// amax semantics: the gradient is shared evenly among tied maxima.
Tensor max(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false,
           Site site = Site::here());
// correction 1 = unbiased (PyTorch's default), 0 = population variance.
Tensor var(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false,
           int64_t correction = 1, Site site = Site::here());
Tensor argmax(const Tensor& x, int64_t dim, bool keepdim = false,
              Site site = Site::here());  // int64, no gradient
// amin semantics, as max above.
Tensor min(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false,
           Site site = Site::here());
Tensor argmin(const Tensor& x, int64_t dim, bool keepdim = false,
              Site site = Site::here());  // int64, no gradient; NaN counts as the minimum
Tensor logsumexp(const Tensor& x, std::vector<int64_t> dims, bool keepdim = false,
                 Site site = Site::here());
// Spelled tg::std where `using namespace tg` is in force (std alone names the namespace).
Tensor std(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false,
           int64_t correction = 1, Site site = Site::here());
// (std, mean), PyTorch's order.
std::pair<Tensor, Tensor> std_mean(const Tensor& x, std::vector<int64_t> dims = {},
                                   bool keepdim = false, int64_t correction = 1,
                                   Site site = Site::here());
// Products and running scans along one dim (reduce/scan.cpp): prod's and cumprod's gradients are
// exact with zeros; cummax / cummin return values and indices (a NaN stays once seen, ties take the
// later index, PyTorch's rules); logcumsumexp is stable.
Tensor prod(const Tensor& x, Site site = Site::here());  // every element: a 0-dim result
Tensor prod(const Tensor& x, int64_t dim, bool keepdim = false, Site site = Site::here());
// Running sum along dim; int64 and bool inputs give int64, like PyTorch; float32 accumulates in
// double.
Tensor cumsum(const Tensor& x, int64_t dim, Site site = Site::here());
Tensor cumprod(const Tensor& x, int64_t dim, Site site = Site::here());
struct ValuesIndices;
ValuesIndices cummax(const Tensor& x, int64_t dim, Site site = Site::here());
ValuesIndices cummin(const Tensor& x, int64_t dim, Site site = Site::here());
Tensor logcumsumexp(const Tensor& x, int64_t dim, Site site = Site::here());
// bool results (no gradient): a number is true where it is not 0
Tensor all(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false,
           Site site = Site::here());
Tensor any(const Tensor& x, std::vector<int64_t> dims = {}, bool keepdim = false,
           Site site = Site::here());
Tensor isnan(const Tensor& x, Site site = Site::here());
Tensor isinf(const Tensor& x, Site site = Site::here());
Tensor isfinite(const Tensor& x, Site site = Site::here());

// ---- linear algebra (BLAS) ----
// PyTorch's rules: 1-D·1-D dot, 2-D·2-D mm, 1-D operands get a dim prepended/appended and
// removed, batch dims broadcast.
Tensor matmul(const Tensor& a, const Tensor& b, Site site = Site::here());
Tensor bmm(const Tensor& a, const Tensor& b,
           Site site = Site::here());  // (B, N, K)·(B, K, M) -> (B, N, M), no broadcasting
Tensor mm(const Tensor& a, const Tensor& b, Site site = Site::here());  // 2-D only
// y = x·Wᵀ + b with x (..., Cin), W (Cout, Cin), b (Cout) or undefined.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
              Site site = Site::here());

// ---- shape ----
Tensor reshape(const Tensor& x, Shape shape,
               Site site = Site::here());  // one -1 allowed; shares storage
Tensor view(const Tensor& x, Shape shape, Site site = Site::here());
Tensor flatten(const Tensor& x, int64_t start_dim = 0, int64_t end_dim = -1,
               Site site = Site::here());
Tensor transpose(const Tensor& x, int64_t d0, int64_t d1, Site site = Site::here());
Tensor permute(const Tensor& x, std::vector<int64_t> dims, Site site = Site::here());
Tensor squeeze(const Tensor& x, Site site = Site::here());  // every size-1 dim
Tensor squeeze(const Tensor& x, int64_t d,
               Site site = Site::here());  // no-op when size(d) != 1, like PyTorch
Tensor unsqueeze(const Tensor& x, int64_t d, Site site = Site::here());
Tensor expand(const Tensor& x, Shape shape, Site site = Site::here());  // -1 keeps a dim
Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length,
              Site site = Site::here());
// Python's x[start:end:step] along dim (negative and out-of-range bounds clamp like Python).
Tensor slice(const Tensor& x, int64_t dim, int64_t start, int64_t end, int64_t step = 1,
             Site site = Site::here());
// x[..., index, ...] along dim (negative index counts from the end): a view with one dim fewer.
Tensor select(const Tensor& x, int64_t dim, int64_t index, Site site = Site::here());
Tensor t(const Tensor& x, Site site = Site::here());  // 2-D transpose; 0-D/1-D as they are
Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index,
                    Site site = Site::here());  // index int64 1-D
Tensor cat(const std::vector<Tensor>& xs, int64_t dim = 0, Site site = Site::here());
Tensor stack(const std::vector<Tensor>& xs, int64_t dim = 0, Site site = Site::here());
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim = 0,
                          Site site = Site::here());
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim = 0,
                          Site site = Site::here());
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim = 0,
                          Site site = Site::here());

// The same into exactly N parts, for structured bindings (PyTorch's `q, k, v = x.chunk(3, -1)`):
//   auto [q, k, v] = tg::chunk<3>(qkv, -1);        auto [a, b] = tg::split<2>(x, 4, 1);
// Throws tg::Error naming the op, the shape and both counts when the parts are not N (chunk
// gives fewer when the dim's size is not spread over N: 4 into 3 chunks gives 2 of 2).
namespace detail {
void check_parts(size_t got, size_t want, const char* op, const Tensor& x, int64_t dim);
template <size_t N>
std::array<Tensor, N> to_array(const std::vector<Tensor>& parts) {
  std::array<Tensor, N> out;
  for (size_t i = 0; i < N; ++i) out[i] = parts[i];
  return out;
}
}  // namespace detail
template <size_t N>
std::array<Tensor, N> chunk(const Tensor& x, int64_t dim = 0, Site site = Site::here()) {
  std::vector<Tensor> parts = chunk(x, static_cast<int64_t>(N), dim, site);
  detail::check_parts(parts.size(), N, "chunk", x, dim);
  return detail::to_array<N>(parts);
}
template <size_t N>
std::array<Tensor, N> split(const Tensor& x, int64_t split_size, int64_t dim = 0,
                            Site site = Site::here()) {
  std::vector<Tensor> parts = split(x, split_size, dim, site);
  detail::check_parts(parts.size(), N, "split", x, dim);
  return detail::to_array<N>(parts);
}  // torch.einsum (matmul/einsum.cpp): "ij,jk->ik", implicit output (letters seen once, sorted),
   // "..."
// broadcast dims, repeated letters for diagonals ("ii->i"); composed (matmul, sum, diagonal),
// so it is differentiable. Errors name the equation and the shapes.
Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands,
              Site site = Site::here());
// Picked by computed positions (shape/diagonal.cpp; views where PyTorch's are, so writes reach x):
// diagonal(x, offset, dim1, dim2) (the diagonal as a last dim, a view), diag (1-D: the matrix with
// x on diagonal k; 2-D: a copy of its diagonal k), unfold(x, dim, size, step) (windows as a last
// dim, a view), nonzero
// ((count, ndim) int64 positions of the nonzero elements, no gradient).
Tensor diagonal(const Tensor& x, int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1,
                Site site = Site::here());
Tensor diag(const Tensor& x, int64_t diagonal = 0, Site site = Site::here());
Tensor unfold(const Tensor& x, int64_t dim, int64_t size, int64_t step, Site site = Site::here());
Tensor nonzero(const Tensor& x, Site site = Site::here());
// Reordering and repeating (shape/repeat.cpp), PyTorch's semantics:
Tensor flip(const Tensor& x, std::vector<int64_t> dims, Site site = Site::here());
// dims empty: over the flattened tensor (one shift)
Tensor roll(const Tensor& x, std::vector<int64_t> shifts, std::vector<int64_t> dims = {},
            Site site = Site::here());
Tensor repeat(const Tensor& x, std::vector<int64_t> sizes, Site site = Site::here());  // tiles
// each element `repeats` times in a row along dim (unset: over the flattened tensor)
Tensor repeat_interleave(const Tensor& x, int64_t repeats,
                         std::optional<int64_t> dim = std::nullopt, Site site = Site::here());
Tensor repeat_interleave(const Tensor& x, const Tensor& repeats,
                         std::optional<int64_t> dim = std::nullopt, Site site = Site::here());
// pads (left, right) for the last dim, then the one before, …; mode "constant" (value; negative
// pads crop), "reflect", "replicate" or "circular" (torch.nn.functional.pad)
Tensor pad(const Tensor& x, std::vector<int64_t> pads, const std::string& mode = "constant",
           double value = 0.0, Site site = Site::here());
Tensor unflatten(const Tensor& x, int64_t dim, const Shape& sizes,
                 Site site = Site::here());  // one -1 allowed
std::vector<Tensor> meshgrid(const std::vector<Tensor>& tensors, const std::string& indexing = "ij",
                             Site site = Site::here());
// einops: rearrange(x, "b t (h d) -> b h t d", {{"h", 4}}). Supports grouping "(...)" on both
// sides, axis names and anonymous "1" axes; the ellipsis "..." is not supported.
Tensor rearrange(const Tensor& x, const std::string& pattern,
                 const std::vector<std::pair<std::string, int64_t>>& sizes = {},
                 Site site = Site::here());

// ---- neural-network functions ----
Tensor softmax(const Tensor& x, int64_t dim, Site site = Site::here());
Tensor log_softmax(const Tensor& x, int64_t dim, Site site = Site::here());
// softmax(−x, dim) (torch.nn.functional.softmin); a 0-dim input takes dim 0 or −1.
Tensor softmin(const Tensor& x, int64_t dim, Site site = Site::here());
// mask is bool and broadcasts to x; value is written where mask is true.
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value, Site site = Site::here());
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b,
             Site site = Site::here());  // broadcasting
// Normalises over the trailing normalized_shape dims; weight/bias may be undefined.
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), double eps = 1e-5, Site site = Site::here());
// RMSNorm over the trailing normalized_shape dims (torch.nn.functional.rms_norm):
// x / sqrt(mean(x²) + eps) · weight; weight may be undefined; eps unset: the dtype's epsilon.
Tensor rms_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = Tensor(),
                std::optional<double> eps = std::nullopt, Site site = Site::here());
// Rotary position embeddings (rotary/): x (..., T at seq_dim, ..., D), cos and sin (T, R/2),
// R <= D even: the first R dims of x turn in pairs by the angles at each position, half-split
// pairs (i, i + R/2) as in GPT-NeoX and Hugging Face's rotate_half, or interleaved (2i, 2i+1) as
// in GPT-J and Meta's LLaMA; dims past R pass through. Decoding at an offset: pass the tables'
// rows from the offset (nn::RotaryEmbedding does).
Tensor apply_rotary(const Tensor& x, const Tensor& cos, const Tensor& sin, bool interleaved = false,
                    int64_t seq_dim = -2, Site site = Site::here());
// weight (V, C), indices int64 any shape -> (..., C). Rows equal to padding_idx get no gradient.
// padding_idx: none by default (PyTorch's None); negative values count from V like PyTorch (-1 is
// row V-1).
Tensor embedding(const Tensor& indices, const Tensor& weight,
                 std::optional<int64_t> padding_idx = std::nullopt, Site site = Site::here());
// CUDA: embedding's backward sums rows in a fixed order (default, reproducible bit for bit) or,
// when off, with atomics (faster, run-to-run differences in the last bits).
void embedding_set_deterministic(bool on);
// Zeroes each element with probability p and scales the rest by 1/(1-p) when training.
Tensor dropout(const Tensor& x, double p, bool training = true, Site site = Site::here());

// BatchMean (sum / size of dim 0) is kl_div's alone.
enum class Reduction { None, Mean, Sum, BatchMean };
struct CrossEntropyOptions {
  Reduction reduction = Reduction::Mean;
  int64_t ignore_index = -100;
  double label_smoothing = 0.0;
  Tensor weight;  // (C) class weights (PyTorch's weight=), logits' dtype; undefined: none
};
// logits (N, C) or (N, C, d1, ...), target int64 (N) or (N, d1, ...) class indices, or
// probabilities of the logits' shape and dtype (PyTorch's soft targets: mean divides by the
// N·d1·… rows, never by weights; ignore_index does not apply); PyTorch's semantics. With weight,
// class-index targets weigh each row by weight[target] and mean divides by their sum (as
// nll_loss), label smoothing included. The fused kernel serves the unweighted class-index case;
// weights and probability targets are composed from log_softmax, nll_loss and sums.
Tensor cross_entropy(const Tensor& logits, const Tensor& target,
                     const CrossEntropyOptions& opts = {}, Site site = Site::here());
// The other losses (loss/composed.cpp), torch.nn.functional's names, argument order and defaults;
// input and target of one floating dtype, broadcasting where PyTorch's do.
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
                Site site = Site::here());
Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
               Site site = Site::here());
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target,
                      Reduction reduction = Reduction::Mean, double beta = 1.0,
                      Site site = Site::here());
Tensor huber_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
                  double delta = 1.0, Site site = Site::here());
// input probabilities in [0, 1], target the same shape; weight (broadcast) may be undefined.
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target,
                            const Tensor& weight = Tensor(), Reduction reduction = Reduction::Mean,
                            Site site = Site::here());
// input logits; pos_weight (broadcast over the last dim, one per class) may be undefined.
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const Tensor& weight = Tensor(),
                                        const Tensor& pos_weight = Tensor(),
                                        Reduction reduction = Reduction::Mean,
                                        Site site = Site::here());
// input log-probabilities (C), (N, C) or (N, C, d1, ...), target int64 () / (N) / (N, d1, ...);
// weight (C) may be undefined; mean divides by the summed weights of the targets not ignored.
Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight = Tensor(),
                int64_t ignore_index = -100, Reduction reduction = Reduction::Mean,
                Site site = Site::here());
// input log-probabilities; target probabilities, or log-probabilities with log_target.
Tensor kl_div(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
              bool log_target = false, Site site = Site::here());
Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, int64_t dim = 1, double eps = 1e-8,
                         Site site = Site::here());
Tensor normalize(const Tensor& x, double p = 2.0, int64_t dim = 1, double eps = 1e-12,
                 Site site = Site::here());

// ---- indexing and sampling (index/gather.cpp; CUDA inputs are computed on the CPU and returned on
// their device) ----
// Values and their int64 positions along the dim: auto [v, i] = topk(x, 3);
struct ValuesIndices {
  Tensor values, indices;
};
// out (index's shape) = x picked along dim: out[i][j][k] = x[i][index[i][j][k]][k] for dim 1.
// index int64 with x's ndim, index.size(d) <= x.size(d) for d != dim; values in [0, x.size(dim)).
Tensor gather(const Tensor& x, int64_t dim, const Tensor& index, Site site = Site::here());
// Out-of-place: x with src added at index along dim (out[i][index[i][j]] += src[i][j] for dim 1;
// repeated indices sum). index and src have x's ndim, index.size(d) <= src.size(d) for every d and
// <= x.size(d) for d != dim. dsrc has src's shape, zero where index does not reach.
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                   Site site = Site::here());
// index/scatter.cpp, PyTorch's semantics (shapes as scatter_add): scatter writes src at index along
// dim (a repeated target takes the last write in index order, and only that write gets gradient);
// scatter_reduce combines them with reduce "sum", "prod", "mean", "amax" or "amin",
// with x's own values unless include_self is false. Floating x and src.
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
               Site site = Site::here());
// scatter with one value at every index position (the one-hot idiom
// zeros({N, C}).scatter(1, labels, 1.0)); dx is g with the written places zeroed.
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, double value,
               Site site = Site::here());
// In-place scatter (x.scatter_(dim, index, src / value) in PyTorch), under the in-place rules of
// ops.hpp's "in-place writes". Tensor::scatter_ methods belong in autograd/tensor.hpp.
Tensor scatter_(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                Site site = Site::here());
Tensor scatter_(const Tensor& x, int64_t dim, const Tensor& index, double value,
                Site site = Site::here());
Tensor scatter_reduce(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                      const std::string& reduce, bool include_self = true,
                      Site site = Site::here());
// The k largest (smallest) along dim; ties keep the lower index first, like a stable sort; NaN
// counts as the largest value. sorted = false: the chosen k in index order. Values differentiable.
ValuesIndices topk(const Tensor& x, int64_t k, int64_t dim = -1, bool largest = true,
                   bool sorted = true, Site site = Site::here());
// Stable sort along dim (NaN last ascending, first descending); values differentiable.
ValuesIndices sort(const Tensor& x, int64_t dim = -1, bool descending = false,
                   Site site = Site::here());
Tensor argsort(const Tensor& x, int64_t dim = -1, bool descending = false,
               Site site = Site::here());  // int64, the indices of sort
// x (B..., N, C): keeps (r, c) with c - r <= diagonal (tril) or c - r >= diagonal (triu), zeroes
// the rest.
Tensor tril(const Tensor& x, int64_t diagonal = 0, Site site = Site::here());
Tensor triu(const Tensor& x, int64_t diagonal = 0, Site site = Site::here());
// index int64 (...) -> int64 (..., C) with C = num_classes (-1: the largest value + 1).
Tensor one_hot(const Tensor& index, int64_t num_classes = -1, Site site = Site::here());
// probs (C) or (N, C), finite, non-negative, a positive entry per row (need not sum to 1) ->
// int64 (num_samples) or (N, num_samples), drawn from default_generator() (tg::manual_seed fixes
// them). Without replacement num_samples <= the non-zero categories of every row.
Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement = false,
                   Site site = Site::here());

// ---- in-place writes (inplace/) ----
// Each writes into x's elements (a view writes into its base), bumps the storage version
// (note_inplace_write) and returns x (the same handle). Under autograd they follow PyTorch: an
// in-place op on a leaf that requires grad is refused (run it under NoGradGuard, as optimizer steps
// do); on a non-leaf it records the op and x takes the new node as its grad_fn; through a view,
// the view's base takes the history "base with the view's region replaced" (PyTorch's
// CopySlices). A backward that saved x's old values throws, and so does the backward of a view
// made before a recorded write (PyTorch regenerates that view's history; make the view again).
Tensor add_(const Tensor& x, const Tensor& other, double alpha = 1, Site site = Site::here());
Tensor add_(const Tensor& x, double other, Site site = Site::here());
Tensor sub_(const Tensor& x, const Tensor& other, Site site = Site::here());
Tensor sub_(const Tensor& x, double other, Site site = Site::here());
Tensor mul_(const Tensor& x, const Tensor& other, Site site = Site::here());
Tensor mul_(const Tensor& x, double other, Site site = Site::here());
Tensor div_(const Tensor& x, const Tensor& other, Site site = Site::here());
Tensor div_(const Tensor& x, double other, Site site = Site::here());
Tensor clamp_(const Tensor& x, std::optional<double> min, std::optional<double> max,
              Site site = Site::here());
Tensor zero_(const Tensor& x, Site site = Site::here());
Tensor fill_(const Tensor& x, double value, Site site = Site::here());
// x = src broadcast to x's shape, converted to x's dtype and moved to x's device.
Tensor copy_(const Tensor& x, const Tensor& src, Site site = Site::here());
Tensor masked_fill_(const Tensor& x, const Tensor& mask, double value, Site site = Site::here());
// x.index(indices) = value (a tensor broadcast to the indexed shape, or a scalar).
Tensor index_put_(const Tensor& x, const std::vector<TensorIndex>& indices, const Tensor& value,
                  Site site = Site::here());
Tensor index_put_(const Tensor& x, const std::vector<TensorIndex>& indices, double value,
                  Site site = Site::here());
// PyTorch's index_put_(indices, values, accumulate): values broadcast to the indexed shape;
// accumulate adds (a repeated position gets the sum of its values), else each position takes
// its last write in index order (PyTorch's CPU order; only that write gets a gradient).
Tensor index_put_(const Tensor& x, const std::vector<TensorIndex>& indices, const Tensor& values,
                  bool accumulate, Site site = Site::here());
// Out-of-place (torch.index_put): x with the writes above, x itself unchanged.
Tensor index_put(const Tensor& x, const std::vector<TensorIndex>& indices, const Tensor& values,
                 bool accumulate = false, Site site = Site::here());

// The instruction set the CPU kernels run on (chosen once per CPU, ops/core/cpu/isa.cpp):
// "avx512" when every family runs AVX-512, the build's own ("fma3+avx2") when none does, else a
// mix.
const char* simd_kernels();

}  // namespace tg
