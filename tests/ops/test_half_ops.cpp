// tests/ops/test_half_ops.cpp — every public op of docs/ops.md on bfloat16 (and float16) tensors
// gives either a result or a tg::Error naming the op and the dtype, never garbage: a floating
// result must be the float32 op's on the same values within the reduced type's rounding (a loose
// check: ops composed of several rounding steps are allowed a few ulp), a bool / int64 result
// must equal it, and a gradient must come back in the reduced dtype. The families with PyTorch
// fixtures (test_half_{unary,binary,reduce,shape}.cpp) are checked exactly there; this file
// sweeps the rest, and lists the ops that may still refuse (kRefuses).
#include "helpers.hpp"
#include "ops/attention/attention.hpp"
#include "ops/index/index.hpp"

#include <cmath>
#include <functional>
#include <set>
#include <string>
#include <vector>

using namespace tg;

namespace {
using Fn = std::function<Tensor(const Tensor&)>;

// Ops that still refuse bf16 / f16 after this slice: the matmul family (ops/matmul, h4), the
// row-wise ops (softmax, norms, cross-entropy, rotary: h7), and attention (lead). Each may give a
// close result (when its owner lands its reduced kernels) or throw an Error naming the dtype; every
// other op must give one.
// Every op of the sweep now runs bf16/f16: none may refuse (an op added here that refuses
// must be named, with the reason).
const std::set<std::string> kRefuses = {};

void require_close(const std::string& name, const Tensor& y, const Tensor& want, DType t) {
  INFO(name << " " << dtype_name(t));
  REQUIRE(y.shape() == want.shape());
  if (!is_floating(want.dtype())) {
    REQUIRE(y.dtype() == want.dtype());
    REQUIRE(y.to(kFloat64).to_vector<double>() == want.to(kFloat64).to_vector<double>());
    return;
  }
  REQUIRE(y.dtype() == t);
  const double eps = t == kBFloat16 ? 1.0 / 128 : 1.0 / 1024;  // the type's relative ulp
  const std::vector<float> g = y.to(kFloat32).to_vector<float>(),
                           w = want.to(kFloat32).to_vector<float>();
  for (size_t i = 0; i < w.size(); ++i) {
    if (std::isnan(w[i])) {
      REQUIRE(std::isnan(g[i]));
      continue;
    }
    INFO("element " << i << " got " << g[i] << " want " << w[i]);
    REQUIRE(std::fabs(g[i] - w[i]) <= 4 * eps * (std::fabs(w[i]) + 1e-3));
  }
}

// Runs f on x (dtype t, requires grad) and on its float32 values: a result close to the float32
// one and a gradient of dtype t, or, for an op of kRefuses, an Error naming the dtype.
void sweep(const std::string& name, const Fn& f, DType t) {
  manual_seed(1);
  const Tensor x32 = add(abs(randn({4, 6})), 0.25).to(t).to(kFloat32);  // positive: log, sqrt
  const Tensor x = x32.to(t).requires_grad_();
  INFO(name << " " << dtype_name(t));
  Tensor y;
  try {
    manual_seed(2);  // the same draws for both (multinomial)
    y = f(x);
  } catch (const Error& e) {  // allowed only for the ops listed, and naming the dtype
    INFO("threw: " << e.what());
    REQUIRE(kRefuses.count(name) == 1);
    REQUIRE(std::string(e.what()).find(dtype_name(t)) != std::string::npos);
    return;
  }
  manual_seed(2);
  require_close(name, y, f(x32), t);
  if (y.requires_grad() && is_floating(y.dtype())) {
    y.to(kFloat32).sum().backward();
    REQUIRE(x.grad().dtype() == t);
  }
}

Tensor idx(std::vector<int64_t> v) { return tensor(v); }

std::vector<std::pair<std::string, Fn>> table() {
  using T = const Tensor&;
  return {
      {"rsub", [](T x) { return rsub(1.5, x); }},
      {"rdiv", [](T x) { return rdiv(1.5, x); }},
      {"cos", [](T x) { return cos(x); }},
      {"tan", [](T x) { return tan(x); }},
      {"asin", [](T x) { return asin(mul(x, 0.2)); }},
      {"acos", [](T x) { return acos(mul(x, 0.2)); }},
      {"atan", [](T x) { return atan(x); }},
      {"sinh", [](T x) { return sinh(x); }},
      {"cosh", [](T x) { return cosh(x); }},
      {"asinh", [](T x) { return asinh(x); }},
      {"acosh", [](T x) { return acosh(add(x, 1.0)); }},
      {"atanh", [](T x) { return atanh(mul(x, 0.2)); }},
      {"erf", [](T x) { return erf(x); }},
      {"erfc", [](T x) { return erfc(x); }},
      {"exp2", [](T x) { return exp2(x); }},
      {"expm1", [](T x) { return expm1(x); }},
      {"log2", [](T x) { return log2(x); }},
      {"log10", [](T x) { return log10(x); }},
      {"sinc", [](T x) { return sinc(x); }},
      {"floor", [](T x) { return floor(mul(x, 3.0)); }},
      {"ceil", [](T x) { return ceil(mul(x, 3.0)); }},
      {"round", [](T x) { return round(mul(x, 3.0)); }},
      {"trunc", [](T x) { return trunc(mul(x, 3.0)); }},
      {"sign", [](T x) { return sign(sub(x, 1.0)); }},
      {"leaky_relu", [](T x) { return leaky_relu(sub(x, 1.0)); }},
      {"elu", [](T x) { return elu(sub(x, 1.0)); }},
      {"selu", [](T x) { return selu(sub(x, 1.0)); }},
      {"celu", [](T x) { return celu(sub(x, 1.0)); }},
      {"mish", [](T x) { return mish(x); }},
      {"hardswish", [](T x) { return hardswish(x); }},
      {"hardsigmoid", [](T x) { return hardsigmoid(x); }},
      {"hardtanh", [](T x) { return hardtanh(x); }},
      {"relu6", [](T x) { return relu6(x); }},
      {"logsigmoid", [](T x) { return logsigmoid(x); }},
      {"softsign", [](T x) { return softsign(x); }},
      {"glu", [](T x) { return glu(x); }},
      {"clamp_min", [](T x) { return clamp_min(x, 1.0); }},
      {"clamp_max", [](T x) { return clamp_max(x, 1.0); }},
      {"sum_to",
       [](T x) {
         return sum_to(x, {1, 6});
       }},
      {"fmod", [](T x) { return fmod(x, 0.75); }},
      {"remainder", [](T x) { return remainder(x, 0.75); }},
      {"floor_divide", [](T x) { return floor_divide(x, 0.75); }},
      {"copysign", [](T x) { return copysign(x, neg(x)); }},
      {"lerp", [](T x) { return lerp(x, mul(x, 2.0), 0.25); }},
      {"logaddexp", [](T x) { return logaddexp(x, mul(x, 0.5)); }},
      {"isclose", [](T x) { return isclose(x, add(x, 1e-6)); }},
      {"logical_and", [](T x) { return logical_and(gt(x, 1.0), lt(x, 2.0)); }},
      {"logical_not", [](T x) { return logical_not(gt(x, 1.0)); }},
      {"logical_or", [](T x) { return logical_or(x, sub(x, x)); }},
      {"logical_xor", [](T x) { return logical_xor(x, gt(x, 1.0)); }},
      {"eq", [](T x) { return eq(x, x); }},
      {"ne", [](T x) { return ne(x, mul(x, 2.0)); }},
      {"le", [](T x) { return le(x, 1.0); }},
      {"ge", [](T x) { return ge(x, 1.0); }},
      {"mean", [](T x) { return x.mean(); }},
      {"min", [](T x) { return min(x, {0}); }},
      {"argmin", [](T x) { return argmin(x, 1); }},
      {"std_mean", [](T x) { return std_mean(x, {1}).first; }},
      {"cummin", [](T x) { return cummin(x, 1).values; }},
      {"logcumsumexp", [](T x) { return logcumsumexp(x, 1); }},
      {"all", [](T x) { return all(gt(x, 0.0)); }},
      {"any", [](T x) { return any(gt(x, 2.0)); }},
      {"isnan", [](T x) { return isnan(x); }},
      {"isinf", [](T x) { return isinf(x); }},
      {"isfinite", [](T x) { return isfinite(x); }},
      {"matmul", [](T x) { return matmul(x, x.t()); }},
      {"bmm", [](T x) { return bmm(unsqueeze(x, 0), unsqueeze(x.t(), 0)); }},
      {"mm", [](T x) { return mm(x, x.t()); }},
      {"linear", [](T x) { return linear(x, x); }},
      {"einsum",
       [](T x) {
         return einsum("ij,kj->ik", {x, x});
       }},
      {"reshape",
       [](T x) {
         return reshape(x, {6, 4});
       }},
      {"view", [](T x) { return view(x, {24}); }},
      {"flatten", [](T x) { return flatten(x); }},
      {"transpose", [](T x) { return transpose(x, 0, 1).contiguous(); }},
      {"squeeze", [](T x) { return squeeze(unsqueeze(x, 0)); }},
      {"expand",
       [](T x) {
         return expand(unsqueeze(x, 0), {2, 4, 6}).contiguous();
       }},
      {"slice", [](T x) { return slice(x, 1, 0, 6, 2).contiguous(); }},
      {"select", [](T x) { return select(x, 0, 2); }},
      {"split", [](T x) { return split(x, 4, 1)[1]; }},
      {"chunk", [](T x) { return chunk(x, 2, 0)[1]; }},
      {"diagonal", [](T x) { return diagonal(x).contiguous(); }},
      {"diag", [](T x) { return diag(select(x, 0, 1)); }},
      {"unfold", [](T x) { return unfold(x, 1, 2, 2).contiguous(); }},
      {"nonzero", [](T x) { return nonzero(gt(x, 1.0)); }},
      {"repeat_interleave", [](T x) { return repeat_interleave(x, 2, 0); }},
      {"pad",
       [](T x) {
         return pad(x, {1, 2}, "constant", 0.5);
       }},
      {"unflatten",
       [](T x) {
         return unflatten(x, 1, {2, 3});
       }},
      {"meshgrid",
       [](T x) {
         return meshgrid({select(x, 0, 0), select(x, 1, 0)})[0];
       }},
      {"rearrange", [](T x) { return rearrange(x, "a b -> b a"); }},
      {"softmax", [](T x) { return softmax(x, 1); }},
      {"log_softmax", [](T x) { return log_softmax(x, 1); }},
      {"softmin", [](T x) { return softmin(x, 1); }},
      {"layer_norm", [](T x) { return layer_norm(x, {6}); }},
      {"rms_norm", [](T x) { return rms_norm(x, {6}); }},
      {"apply_rotary",
       [](T x) {
         const Tensor u = reshape(x, {1, 1, 4, 6});
         return apply_rotary(u, ones({4, 3}, x.dtype()), zeros({4, 3}, x.dtype()));
       }},
      {"cross_entropy",
       [](T x) {
         return cross_entropy(x, idx({0, 1, 2, 3}));
       }},
      {"nll_loss",
       [](T x) {
         return nll_loss(x, idx({0, 1, 2, 3}));
       }},
      {"mse_loss", [](T x) { return mse_loss(x, mul(x, 0.5)); }},
      {"l1_loss", [](T x) { return l1_loss(x, mul(x, 0.5)); }},
      {"smooth_l1_loss", [](T x) { return smooth_l1_loss(x, mul(x, 0.5)); }},
      {"huber_loss", [](T x) { return huber_loss(x, mul(x, 0.5)); }},
      {"binary_cross_entropy", [](T x) { return binary_cross_entropy(mul(x, 0.2), mul(x, 0.1)); }},
      {"binary_cross_entropy_with_logits",
       [](T x) { return binary_cross_entropy_with_logits(x, mul(x, 0.1)); }},
      {"kl_div", [](T x) { return kl_div(x, mul(x, 0.1)); }},
      {"cosine_similarity", [](T x) { return cosine_similarity(x, mul(x, 0.5)); }},
      {"normalize", [](T x) { return normalize(x); }},
      {"scatter",
       [](T x) {
         return scatter(x, 1, zeros({4, 1}, kInt64), 2.5);
       }},
      {"scatter_reduce",
       [](T x) {
         return scatter_reduce(x, 1, zeros({4, 2}, kInt64), x.narrow(1, 0, 2), "sum");
       }},
      {"argsort", [](T x) { return argsort(x, 1); }},
      {"multinomial", [](T x) { return multinomial(x, 2); }},
      {"index",
       [](T x) {
         return index(x, {TensorIndex(idx({2, 0}))});
       }},
      {"index_put",
       [](T x) {
         return index_put(x, {TensorIndex(idx({2, 0}))}, ones({2, 6}, x.dtype()));
       }},
      {"scaled_dot_product_attention",
       [](T x) {
         const Tensor q = reshape(x, {1, 1, 4, 6});
         return scaled_dot_product_attention(q, q, q).output;
       }},
      {"attention",
       [](T x) {
         const Tensor q = reshape(x, {1, 4, 6});
         return attention(q, q, q).first;
       }},
  };
}
}  // namespace

TEST_CASE("half ops: every other op gives a close result or an Error naming op and dtype") {
  for (DType t : {kBFloat16, kFloat16})
    for (const auto& [name, f] : table()) sweep(name, f, t);
}

TEST_CASE("half ops: the bitwise ops stay integer-only and say so") {
  for (DType t : {kBFloat16, kFloat16}) {
    const Tensor x = ones({3}, t);
    REQUIRE_ERROR(bitwise_and(x, x), dtype_name(t));
    REQUIRE_ERROR(bitwise_not(x), dtype_name(t));
    REQUIRE_ERROR(bitwise_left_shift(x, x), dtype_name(t));
  }
}

TEST_CASE("half ops: in-place ops write the reduced dtype, rounded once") {
  for (DType t : {kBFloat16, kFloat16}) {
    Tensor x = full({3, 1029}, 1.0, t);
    add_(x, full({3, 1029}, 1.0 / 3, t));
    REQUIRE(x.dtype() == t);
    REQUIRE(x.to(kFloat32).to_vector<float>()[1028] ==
            add(ones({1}), full({1}, 1.0 / 3, t).to(kFloat32)).to(t).to(kFloat32).item<float>());
    sub_(x, full({3, 1029}, 0.25, t));
    add_(x, 0.25);
    div_(x, 0.5);
    mul_(x, 1.0);
    clamp_(x, 0.0, 2.5);
    REQUIRE(x.to(kFloat32).max().item<float>() == 2.5f);
    masked_fill_(x, gt(x, 1.0), -1.0);
    fill_(x.narrow(1, 0, 2), 4.0);
    REQUIRE(x.to(kFloat32).sum().item<float>() == 3 * (8.0f - 1027.0f));
    zero_(x);
    REQUIRE(x.to(kFloat32).abs().sum().item<float>() == 0.0f);
    scatter_(x, 1, zeros({3, 1}, kInt64), 7.0);
    index_put_(x, {TensorIndex(idx({1}))}, 2.0);
    REQUIRE(x.to(kFloat32).sum().item<float>() == 7.0f * 2 + 2.0f * 1029);
  }
}
