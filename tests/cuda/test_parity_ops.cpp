// tests/cuda/test_parity_ops.cpp — every op family on the GPU against the float64 CPU
// reference, forward and backward, float32 and float64, on random shapes with broadcasting,
// size-1 and empty dims, odd sizes and the edge values the CPU defines (NaN, -inf rows).
// One table; each row is one case (see parity_harness.hpp). The same table runs in bfloat16 and
// float16 against the CPU in that dtype.
#include "tests/cuda/parity_harness.hpp"
#include "tools/unary_samples.hpp"

#include <cmath>

#include <limits>

using namespace tg;
using tgt::Inputs;
using tgt::ParityCase;

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor rn(Shape s) { return randn(s, kFloat64); }
Tensor pos(Shape s) { return add(abs(randn(s, kFloat64)), 0.5); }  // > 0.5: log, sqrt, pow, div
Tensor ints(int64_t hi, Shape s) { return randint(0, hi, s); }
Inputs in(std::initializer_list<Tensor> l) { return Inputs(l); }
std::vector<Tensor> out(std::initializer_list<Tensor> l) { return std::vector<Tensor>(l); }

// Rounds a CPU float64 tensor to multiples of 0.5 so that max has ties.
Tensor round_half(const Tensor& x) {
  Tensor y = x.clone();
  double* p = y.data<double>();
  for (int64_t i = 0; i < y.numel(); ++i) p[i] = std::round(2 * p[i]) / 2;
  return y;
}
Tensor first(const Tensor& x) { return squeeze(narrow(x, 0, 0, 1), 0); }

// A tensor with some entries -inf: rows of softmax inputs fully or partly masked.
Tensor with_neg_inf_rows(Shape s) {
  Tensor x = rn(s);
  double* p = x.data<double>();
  const int64_t C = s.back();
  for (int64_t c = 0; c < C; ++c) p[c] = -kInf;         // row 0: fully masked
  for (int64_t c = 0; c < C; c += 2) p[C + c] = -kInf;  // row 1: every other key
  return x;
}

std::vector<ParityCase> cases() {
  std::vector<ParityCase> v;
  auto add_case = [&](std::string name, std::function<Inputs()> i, tgt::Fn f, double tol32 = 2e-5,
                      bool bwd = true) {
    v.push_back(ParityCase{std::move(name), std::move(i), std::move(f), tol32, 1e-10, bwd});
  };
  // ---- elementwise, broadcasting ----
  add_case(
      "add same shape",
      [] {
        return in({rn({37, 5}), rn({37, 5})});
      },
      [](const Inputs& x) { return out({add(x[0], x[1])}); });
  add_case(
      "add bias (N, C) + (C)",
      [] {
        return in({rn({33, 70}), rn({70})});
      },
      [](const Inputs& x) { return out({add(x[0], x[1])}); });
  add_case(
      "sub (2,1,4) - (3,1)",
      [] {
        return in({rn({2, 1, 4}), rn({3, 1})});
      },
      [](const Inputs& x) { return out({sub(x[0], x[1])}); });
  add_case(
      "mul (4,1,3,1) * (5,1,2)",
      [] {
        return in({rn({4, 1, 3, 1}), rn({5, 1, 2})});
      },
      [](const Inputs& x) { return out({mul(x[0], x[1])}); });
  add_case(
      "div by positive, scalar tensor",
      [] {
        return in({rn({6, 7}), pos({})});
      },
      [](const Inputs& x) { return out({div(x[0], x[1])}); });
  add_case(
      "pow tensor^tensor",
      [] {
        return in({pos({5, 4}), rn({4})});
      },
      [](const Inputs& x) { return out({pow(x[0], x[1])}); }, 1e-4);
  // relu and pow with a scalar exponent at special values (0, -0, ±inf, NaN, subnormal,
  // negative), 70 elements: the CPU's vector body and tail, PyTorch's answers (relu(NaN) = NaN and
  // passes the gradient, x^0 = 1, x^1 = x, ±0.5 through sqrt).
  add_case(
      "relu and pow(x, e) at special values",
      [] {
        const double sv[] = {0.0, -0.0, kInf, -kInf, std::nan(""), 1e-310, -1e-310, -2.5, 1.5, 3};
        std::vector<double> v(70);
        for (size_t i = 0; i < v.size(); ++i) v[i] = sv[i % 10];
        return in({tensor(v, {70})});
      },
      [](const Inputs& x) {
        return out({relu(x[0]), pow(x[0], 0.0), pow(x[0], 1.0), pow(x[0], 0.5), pow(x[0], -0.5),
                    pow(x[0], -1.0), pow(x[0], 2.0), pow(x[0], 3.0), pow(x[0], 2.5)});
      });
  add_case(
      "maximum/minimum with ties",
      [] {
        Tensor a = rn({8, 9});
        Tensor b = where(gt(a, zeros({}, kFloat64)), a, rn({8, 9}));  // ties where a > 0
        return in({a, b});
      },
      [](const Inputs& x) {
        return out({maximum(x[0], x[1]), minimum(x[0], x[1])});
      });
  add_case(
      "scalar forms",
      [] {
        return in({pos({3, 11})});
      },
      [](const Inputs& x) {
        return out({add(x[0], 1.5), sub(x[0], 0.25), rsub(2.0, x[0]), mul(x[0], -3.0),
                    div(x[0], 7.0), rdiv(1.0, x[0]), pow(x[0], 2.5), pow(x[0], 0.0)});
      });
  add_case(
      "unary functions",
      [] {
        return in({rn({4, 33})});
      },
      [](const Inputs& x) {
        return out({neg(x[0]), exp(x[0]), tanh(x[0]), sigmoid(x[0]), relu(x[0]), abs(x[0]),
                    gelu(x[0]), gelu(x[0], "tanh"), clamp(x[0], -0.5, 0.7), clamp_min(x[0], 0.1),
                    clamp_max(x[0], -0.1)});
      });
  add_case(
      "unary on positives",
      [] {
        return in({pos({5, 17})});
      },
      [](const Inputs& x) {
        return out({log(x[0]), sqrt(x[0]), rsqrt(x[0])});
      });
  // Every line of the unary list (tools/unary_samples.hpp), one case per input domain.
  for (kern::UnDomain d : tgu::kDomains)
    add_case(
        std::string("unary list, ") + tgu::domain_name(d),
        [d] {
          return in({tgu::in_domain(rn({4, 33}), d)});
        },
        [d](const Inputs& x) {
          std::vector<Tensor> o;
          for (const tgu::UnarySample& u : tgu::unary_samples())
            if (u.domain == d) o.push_back(u.call(x[0]));
          return o;
        });
  add_case(
      "activations at other parameters",
      [] {
        return in({rn({4, 33})});
      },
      [](const Inputs& x) {
        const Tensor& v = x[0];
        return out({softplus(v, 2.0, 1.0), leaky_relu(v, 0.2), elu(v, 0.7), selu(v),
                    hardswish(mul(v, 3.0)), hardsigmoid(mul(v, 3.0)), hardtanh(v, -0.5, 0.8),
                    relu6(mul(v, 4.0))});
      });
  add_case(
      "comparisons and logical_not",
      [] {
        return in({ints(3, {4, 5}), ints(3, {5})});
      },
      [](const Inputs& x) {
        return out({eq(x[0], x[1]), ne(x[0], x[1]), lt(x[0], x[1]), le(x[0], x[1]), gt(x[0], x[1]),
                    ge(x[0], x[1]), logical_not(eq(x[0], x[1])), add(x[0], x[1]), mul(x[0], x[1])});
      },
      2e-5, false);
  add_case(
      "where and masked_fill (broadcast masks)",
      [] {
        return in({rn({3, 4, 5}), rn({4, 1}), gt(rn({4, 5}), zeros({}, kFloat64))});
      },
      [](const Inputs& x) {
        return out({where(x[2], x[0], x[1]), masked_fill(x[0], x[2], -2.5),
                    masked_fill(x[0], lt(x[1], zeros({}, x[1].dtype(), x[1].device())), -kInf)});
      });
  // ---- reductions ----
  add_case(
      "sum/mean over dims",
      [] {
        return in({rn({3, 4, 5, 6})});
      },
      [](const Inputs& x) {
        return out({sum(x[0]), sum(x[0], {1}), sum(x[0], {0, 2}, true), sum(x[0], {-1, 1}),
                    mean(x[0], {3}), mean(x[0], {0, 1, 2, 3})});
      });
  add_case(
      "sum of a long row and a long column",
      [] {
        return in({rn({2, 5000}), rn({3000, 3})});
      },
      [](const Inputs& x) {
        return out({sum(x[0], {1}), sum(x[1], {0}), sum(x[1])});
      });
  add_case(
      "max (amax) with ties, var",
      [] {
        Tensor a = round_half(rn({4, 6, 5}));
        return in({a});
      },
      [](const Inputs& x) {
        return out({max(x[0], {1}), max(x[0], {0, 2}, true), max(x[0]), var(x[0], {2}),
                    var(x[0], {0, 1}, false, 0)});
      });
  // The warp-per-row layouts (a last dim >= 32, split when long), the column layouts with a
  // long r, mean's divisor after a split, and ties shared along long rows and columns.
  add_case(
      "mean, max with ties and var along long rows and columns",
      [] {
        return in({round_half(rn({6, 3000})), round_half(rn({2500, 3})), rn({3, 40, 2})});
      },
      [](const Inputs& x) {
        return out({mean(x[0], {1}), max(x[0], {1}), var(x[0], {1}), var(x[0], {0}),
                    mean(x[1], {0}), max(x[1], {0}, true), var(x[1], {0}, false, 0), var(x[2], {1}),
                    max(x[2], {1}), mean(x[2], {0, 2})});
      });
  // The same kernels at special values: a NaN, +inf, -inf, -0 and float32 subnormals in long
  // rows (the warp layouts) and columns (the thread layouts), forward and backward.
  add_case(
      "sum, mean, max and var at NaN, ±inf, -0 and subnormals",
      [] {
        Tensor a = rn({5, 300});
        double* p = a.data<double>();
        p[17] = std::numeric_limits<double>::quiet_NaN();
        p[300 + 250] = std::numeric_limits<double>::infinity();
        p[600 + 3] = -std::numeric_limits<double>::infinity();
        for (int j = 0; j < 300; j += 7) p[900 + j] = -0.0;
        for (int j = 0; j < 300; j += 5) p[1200 + j] = 3e-40 * (1 + j % 3);
        return in({a, transpose(a, 0, 1).contiguous()});
      },
      [](const Inputs& x) {
        return out({sum(x[0], {1}), mean(x[0], {1}), max(x[0], {1}), var(x[0], {1}), sum(x[1], {0}),
                    mean(x[1], {0}), max(x[1], {0}), var(x[1], {0})});
      });
  add_case(
      "argmax and int sums",
      [] {
        return in({rn({5, 7, 3}), ints(9, {4, 6})});
      },
      [](const Inputs& x) {
        return out({argmax(x[0], 1), argmax(x[0], -1, true), sum(x[1], {0}),
                    sum(gt(x[1], full({}, 4, kInt64, x[1].device())))});
      },
      2e-5, false);
  // ---- indexing: no CUDA kernels, the CPU fallback (via_cpu) and its gradients ----
  add_case(
      "gather, scatter_add, topk, sort, cumsum, tril/triu, one_hot through the CPU fallback",
      [] {
        return in({rn({4, 6}), ints(6, {4, 3}), rn({4, 3}), ints(5, {7})});
      },
      [](const Inputs& x) {
        ValuesIndices t = topk(x[0], 2, 1), so = sort(x[0], 0, true);
        return out({gather(x[0], 1, x[1]), scatter_add(x[0], 1, x[1], x[2]), t.values, t.indices,
                    so.values, so.indices, argsort(x[0], -1), cumsum(x[0], 1), tril(x[0], 1),
                    triu(x[0], -1), one_hot(x[3], 6)});
      });
  // ---- matmul ----
  add_case(
      "matmul 2-D, odd sizes",
      [] {
        return in({rn({17, 33}), rn({33, 9})});
      },
      [](const Inputs& x) { return out({matmul(x[0], x[1])}); }, 1e-4);
  add_case(
      "matmul batched broadcast (2,1,5,4)x(3,4,6)",
      [] {
        return in({rn({2, 1, 5, 4}), rn({3, 4, 6})});
      },
      [](const Inputs& x) { return out({matmul(x[0], x[1])}); }, 1e-4);
  v.back().half_floor = 4;  // broadcast operands: each gradient sums rounded batch products (of
                            // up to 5 unit normals: about 4 at most)
  add_case(
      "matmul 1-D cases",
      [] {
        return in({rn({4}), rn({3, 4, 5}), rn({5})});
      },
      [](const Inputs& x) {
        return out({matmul(x[0], x[1]), matmul(x[1], x[2])});
      },
      1e-4);
  v.back().half_floor = 4;  // inputs used twice and broadcast: rounded contributions (sums of up
                            // to 5 products of unit normals: about 4 at most) summed
  add_case(
      "bmm, mm, linear with and without bias",
      [] {
        return in({rn({3, 4, 5}), rn({3, 5, 2}), rn({2, 7, 5}), rn({6, 5}), rn({6})});
      },
      [](const Inputs& x) {
        return out({bmm(x[0], x[1]), mm(first(x[0]), first(x[1])), linear(x[2], x[3], x[4]),
                    linear(x[2], x[3])});
      },
      1e-4);
  // ---- shape ----
  add_case(
      "transpose, permute, expand, narrow, slice",
      [] {
        return in({rn({3, 4, 5})});
      },
      [](const Inputs& x) {
        return out({transpose(x[0], 0, 2), permute(x[0], {1, 2, 0}),
                    expand(narrow(x[0], 0, 0, 1), {2, 4, 5}), narrow(x[0], 1, 1, 2),
                    slice(x[0], 2, 1, 5, 2), reshape(x[0], {5, -1}), squeeze(x[0].unsqueeze(1))});
      });
  add_case(
      "cat, stack, split, chunk",
      [] {
        return in({rn({2, 3, 4}), rn({2, 5, 4}), rn({2, 3, 4})});
      },
      [](const Inputs& x) {
        std::vector<Tensor> parts = split(x[1], {2, 3}, 1);
        return out({cat({x[0], x[1], x[2]}, 1), stack({x[0], x[2]}, 0), parts[0], parts[1],
                    chunk(x[0], 2, 2)[1], rearrange(x[0], "b t c -> c (b t)")});
      });
  add_case(
      "index_select with repeats",
      [] {
        return in({rn({5, 6, 3}), tensor(std::vector<int64_t>{4, 0, 4, 2, 4})});
      },
      [](const Inputs& x) {
        return out({index_select(x[0], 0, x[1]), index_select(x[0], 1, x[1])});
      });
  // ---- neural-network functions ----
  add_case(
      "softmax / log_softmax, last dim, with -inf rows",
      [] {
        return in({with_neg_inf_rows({5, 40})});
      },
      [](const Inputs& x) {
        return out({softmax(x[0], -1), log_softmax(x[0], 1)});
      });
  add_case(
      "softmax long rows (block path) and inner dim",
      [] {
        return in({rn({3, 3000}), rn({4, 7, 6})});
      },
      [](const Inputs& x) {
        return out(
            {softmax(x[0], 1), log_softmax(x[0], 1), softmax(x[1], 1), log_softmax(x[1], 0)});
      });
  add_case(
      "layer_norm: affine, plain, 2-D normalized shape, wide rows",
      [] {
        return in({rn({6, 10, 32}), rn({32}), rn({32}), rn({3, 2000})});
      },
      [](const Inputs& x) {
        return out({layer_norm(x[0], {32}, x[1], x[2]), layer_norm(x[0], {10, 32}),
                    layer_norm(x[3], {2000})});
      },
      1e-4);
  add_case(
      "apply_rotary: half-split, interleaved partial, tables with gradient",
      [] {
        return in({rn({2, 3, 5, 8}), rn({5, 4}), rn({5, 4}), rn({2, 5, 3, 10})});
      },
      [](const Inputs& x) {
        const Tensor c = x[1].detach(), s = x[2].detach();
        return out({apply_rotary(x[0], c, s), apply_rotary(x[3], c, s, true, 1),
                    apply_rotary(x[0], x[1], x[2])});
      });
  add_case(
      "flip, roll, repeat, repeat_interleave, pad",
      [] {
        return in({rn({3, 4, 5})});
      },
      [](const Inputs& x) {
        const Tensor& v = x[0];
        return out({flip(v, {0, 2}), roll(v, {1, -2}, {1, 2}), repeat(v, {2, 1, 1}),
                    repeat_interleave(v, 2, 1), pad(v, {2, 1, 1, 2}, "reflect"),
                    pad(v, {1, 3}, "circular"), pad(v, {2, 2}, "replicate"),
                    pad(v, {1, 1, 1, 1}, "constant", -1.0)});
      });
  add_case(
      "min, logsumexp, std",
      [] {
        return in({rn({5, 7, 3})});
      },
      [](const Inputs& x) {
        return out({min(x[0], {1}), min(x[0]), logsumexp(x[0], {1, 2}), tg::std(x[0], {0})});
      });
  add_case(
      "rms_norm: weighted, plain, 2-D normalized shape, wide rows",
      [] {
        return in({rn({6, 10, 32}), rn({32}), rn({3, 2000})});
      },
      [](const Inputs& x) {
        return out({rms_norm(x[0], {32}, x[1]), rms_norm(x[0], {10, 32}, Tensor(), 1e-5),
                    rms_norm(x[2], {2000}, Tensor(), 1e-6)});
      },
      1e-4);
  v.back().half_floor = 1;  // x used twice: two rounded row gradients summed
  add_case(
      "embedding with padding_idx and repeats",
      [] {
        return in({tensor(std::vector<int64_t>{1, 3, 3, 0, 7, 3}, {2, 3}), rn({8, 5})});
      },
      [](const Inputs& x) {
        return out({embedding(x[0], x[1]), embedding(x[0], x[1], 3)});
      });
  add_case(
      "cross_entropy mean, sum, none, ignore_index, smoothing",
      [] {
        Tensor t = tensor(std::vector<int64_t>{2, -100, 0, 4, 1, 4, -100, 3}, {8});
        return in({rn({8, 5}), t});
      },
      [](const Inputs& x) {
        CrossEntropyOptions sum_o, none_o, sm;
        sum_o.reduction = Reduction::Sum;
        none_o.reduction = Reduction::None;
        sm.label_smoothing = 0.1;
        return out({cross_entropy(x[0], x[1]), cross_entropy(x[0], x[1], sum_o),
                    cross_entropy(x[0], x[1], none_o), cross_entropy(x[0], x[1], sm)});
      });
  add_case(
      "cross_entropy (N, C, d) and a wide vocabulary",
      [] {
        return in({rn({3, 6, 4}), ints(6, {3, 4}), rn({4, 3000}), ints(3000, {4})});
      },
      [](const Inputs& x) {
        return out({cross_entropy(x[0], x[1]), cross_entropy(x[2], x[3])});
      });
  // Kernels the cases above do not reach: argmax's row kernel (a last dim >= 32), where on
  // same-shape operands, embedding's atomic backward.
  add_case(
      "argmax over a long last dim, where on equal shapes",
      [] {
        return in({rn({3, 70}), rn({3, 70})});
      },
      [](const Inputs& x) {
        Tensor z = zeros({}, x[0].dtype(), x[0].device());
        return out({argmax(x[0], 1), where(gt(x[0], x[1]), x[0], x[1]),
                    where(gt(x[0], expand(z, x[0].shape())), x[1], x[0])});
      },
      2e-5, false);
  add_case(
      "embedding backward with atomics (deterministic off)",
      [] {
        return in({tensor(std::vector<int64_t>{1, 3, 3, 0, 7, 3}, {2, 3}), rn({8, 5})});
      },
      [](const Inputs& x) {
        embedding_set_deterministic(false);
        Tensor e = embedding(x[0], x[1], 0);
        embedding_set_deterministic(true);
        return out({e});
      });
  // The vocabulary ops: composed from GPU ops (binary math, einsum, diagonal, unfold, weighted
  // and soft-target cross-entropy) or through CPU copies (scans, scatter): the same values and
  // gradients on the device.
  add_case(
      "fmod remainder copysign lerp logaddexp",
      [] {
        return in({rn({4, 7}), rn({7})});
      },
      [](const Inputs& x) {
        const Tensor away = add(abs(x[1]), 0.5);
        return out({fmod(x[0], away), remainder(x[0], neg(away)), copysign(x[0], x[1]),
                    lerp(x[0], x[1], 0.3), logaddexp(x[0], x[1])});
      });
  add_case(
      "einsum, diagonal, unfold",
      [] {
        return in({rn({2, 3, 4}), rn({4, 5}), rn({5, 5})});
      },
      [](const Inputs& x) {
        return out({einsum("bij,jk->bik", {x[0], x[1]}), diagonal(x[2], 1), unfold(x[0], 2, 2, 1)});
      });
  add_case(
      "prod cumprod cummax logcumsumexp scatter_reduce",
      [] {
        return in({rn({3, 6}), rn({3, 4})});
      },
      [](const Inputs& x) {
        const Tensor idx = tensor(std::vector<int64_t>{0, 2, 0, 5, 1, 1, 3, 1, 2, 4, 4, 0}, {3, 4})
                               .to(x[0].device());
        return out({prod(x[0], 1), cumprod(x[0], 1), cummax(x[0], 1).values, logcumsumexp(x[0], 1),
                    scatter_reduce(x[0], 1, idx, x[1], "mean")});
      });
  add_case(
      "scans at zeros, ties and long lines (cumprod's zero path, cummax ties)",
      [] {
        Tensor x = rn({4, 300});
        double* p = x.data<double>();
        for (int64_t e = 0; e < x.numel(); ++e) p[e] = std::round(p[e] * 2) / 2;  // ties, zeros
        p[5] = 0.0, p[300 + 7] = 0.0, p[300 + 9] = 0.0;
        return in({x});
      },
      [](const Inputs& x) {
        const Tensor s = mul(x[0], 0.1);  // products of 300 stay finite
        return out({cumprod(narrow(s, 1, 0, 40), 1), prod(narrow(s, 1, 0, 12), 1),
                    cummax(x[0], 1).values, cummin(x[0], 0).values, logcumsumexp(x[0], 1)});
      });
  add_case(
      "scatter and scatter_reduce on the device, every reduction, with and without self",
      [] {
        return in({rn({3, 6}), rn({3, 4})});
      },
      [](const Inputs& x) {
        const Tensor idx = tensor(std::vector<int64_t>{0, 2, 0, 5, 1, 1, 3, 1, 2, 4, 4, 0}, {3, 4})
                               .to(x[0].device());
        std::vector<Tensor> r{scatter(x[0], 1, idx, x[1])};
        for (const char* red : {"sum", "prod", "mean", "amax", "amin"})
          for (bool self : {true, false})
            r.push_back(scatter_reduce(x[0], 1, idx, x[1], red, self));
        const Tensor t0 = x[0].transpose(0, 1).contiguous();  // (6, 3)
        const Tensor i0 = tensor(std::vector<int64_t>{5, 0, 1, 2, 2, 2, 0, 5, 4, 1, 3, 3}, {4, 3})
                              .to(x[0].device());
        r.push_back(scatter_reduce(t0, 0, i0, x[1].transpose(0, 1).contiguous(), "mean", false));
        return r;
      });
  add_case(
      "scatter_reduce at special values on 300-long lines: 0 -0 inf -inf NaN subnormals",
      [] {
        Tensor src = rn({2, 300});
        const double sp[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1e-310, -1e-310};
        double* p = src.data<double>();
        for (int64_t e = 0; e < 600; e += 3) p[e] = sp[(e / 3) % 7];
        return in({rn({2, 5}), src});
      },
      [](const Inputs& x) {
        std::vector<int64_t> iv(600);
        for (int64_t e = 0; e < 600; ++e) iv[static_cast<size_t>(e)] = (e * 7 + e / 11) % 5;
        const Tensor idx = tensor(iv, {2, 300}).to(x[0].device());
        std::vector<Tensor> r;
        for (const char* red : {"sum", "prod", "mean", "amax", "amin"})
          for (bool self : {true, false})
            r.push_back(scatter_reduce(x[0], 1, idx, x[1], red, self));
        return r;
      },
      1e-4, false);
  add_case(
      "nonzero across chunk boundaries: -0 and NaN, 1-d to 4-d, none, a 0-dim",
      [] {
        Tensor a = rn({3, 700}), b = rn({2600});
        double* p = a.data<double>();
        for (int64_t e = 0; e < 2100; ++e)
          if (e % 3 != 0) p[e] = e % 7 == 0 ? -0.0 : 0.0;
        p[4] = NAN, p[2099] = NAN;
        double* q = b.data<double>();
        for (int64_t e = 0; e < 2600; ++e)
          if ((e / 100) % 2 == 1) q[e] = 0.0;  // runs of 100 zeros: chunks of every fill
        return in({a, b, zeros({4, 5}, kFloat64), rn({2, 3, 4, 5}), rn({})});
      },
      [](const Inputs& x) {
        return out(
            {nonzero(x[0]), nonzero(x[1]), nonzero(x[2]), nonzero(gt(x[3], 0.3)), nonzero(x[4])});
      },
      2e-5, false);
  add_case(
      "losses: mse l1 smooth_l1 huber bce bce_with_logits nll kl_div cosine_similarity normalize",
      [] {
        return in({rn({6, 5}), rn({6, 5}), tensor(std::vector<int64_t>{1, 0, 4, 2, -100, 3}, {6}),
                   pos({5})});
      },
      [](const Inputs& x) {
        const Tensor p = sigmoid(x[0]), t = sigmoid(x[1]);  // probabilities in (0, 1)
        const Tensor lp = log_softmax(x[0], 1), lt = log_softmax(x[1], 1);
        return out({mse_loss(x[0], x[1]), l1_loss(x[0], x[1], Reduction::Sum),
                    smooth_l1_loss(x[0], x[1], Reduction::None, 0.5),
                    huber_loss(x[0], x[1], Reduction::Mean, 0.7), binary_cross_entropy(p, t, x[3]),
                    binary_cross_entropy_with_logits(x[0], t, Tensor(), x[3], Reduction::Sum),
                    nll_loss(lp, x[2], x[3]), kl_div(lp, exp(lt)),
                    kl_div(lp, lt, Reduction::BatchMean, true), cosine_similarity(x[0], x[1]),
                    normalize(x[0], 3.0, 0)});
      },
      1e-4);
  add_case(
      "reductions and logic: argmin std_mean all any isinf isclose logical_and/or/xor",
      [] {
        Tensor a = round_half(rn({5, 7}));
        a.data<double>()[3] = kInf, a.data<double>()[20] = -kInf;
        return in({a, round_half(rn({5, 7}))});
      },
      [](const Inputs& x) {
        const auto [sd, mean] = std_mean(x[1], {1}, 1, true);
        const Tensor a = gt(x[0], 0.0), b = gt(x[1], 0.0);
        return out({argmin(x[1], 1), argmin(x[1], 0, true), sd, mean, std_mean(x[1]).first,
                    all(a, {1}), any(b, {0}), all(a), any(a), isinf(x[0]),
                    isclose(x[0], x[1], 1e-3, 0.3), logical_and(a, b), logical_or(a, b),
                    logical_xor(a, b)});
      });
  add_case(
      "shapes: glu diag unflatten meshgrid view flatten unsqueeze select t index",
      [] {
        return in({rn({4, 6}), rn({5}), rn({2, 3, 4})});
      },
      [](const Inputs& x) {
        using indexing::Slice;
        const std::vector<Tensor> g = meshgrid({x[1], narrow(x[0], 0, 0, 1).reshape({6})}, "xy");
        return out(
            {glu(x[0], 1), diag(x[0], 1), diag(x[1], -2), unflatten(x[0], 1, {2, 3}), g[0], g[1],
             view(x[2], {6, 4}), flatten(x[2], 1), unsqueeze(x[1], 0), select(x[2], 1, 2), t(x[0]),
             index(x[2], {TensorIndex(Slice(0, 2)), TensorIndex(1), TensorIndex(Slice(1, 4, 2))}),
             index(x[0], {TensorIndex(tensor(std::vector<int64_t>{3, 0, 3}).to(x[0].device()))})});
      });
  add_case(
      "in-place writes on a non-leaf: add_ sub_ mul_ div_ clamp_ zero_ fill_ copy_ masked_fill_ "
      "index_put_",
      [] {
        return in({rn({4, 5}), pos({4, 5})});
      },
      [](const Inputs& x) {
        using indexing::Slice;
        Tensor y = mul(x[0], 1.0);  // a non-leaf: its writes are recorded
        add_(y, x[1], 0.5);
        sub_(y, 0.25);
        mul_(y, x[1]);
        div_(y, x[1]);
        clamp_(y, -1.0, 1.5);
        Tensor z = mul(x[1], 2.0);
        masked_fill_(z, gt(x[0], 0.5), -3.0);
        index_put_(z, {TensorIndex(1), TensorIndex(Slice(0, 3))},
                   narrow(select(x[0], 0, 2), 0, 0, 3));
        Tensor w = mul(x[0], 1.0);
        fill_(narrow(w, 0, 1, 1), 7.0);
        zero_(narrow(w, 1, 0, 2));
        copy_(narrow(w, 0, 3, 1), narrow(x[1], 0, 0, 1));
        return out({y, z, w});
      });
  add_case(
      "the seed articles' attention and additive (Bahdanau) attention",
      [] {
        return in({rn({2, 5, 8}), rn({2, 7, 8}), rn({2, 7, 6}), rn({4, 8}), rn({4, 8}), rn({4})});
      },
      [](const Inputs& x) {
        const Tensor mask = tril(ones({5, 7}, kFloat64).to(x[0].device()), 2);
        const auto [o1, w1] = attention(x[0], x[1], x[2], mask);
        Tensor pad = zeros({2, 7}, kBool);
        pad.data<bool>()[7 + 6] = true;  // batch 1 pads its last key (a mask on q's device)
        const auto [o2, w2] = additive_attention(
            x[0], x[1], x[2], x[3], x[4], x[5],
            AttentionMask::causal(CausalAlign::BottomRight) &
                AttentionMask::key_padding(pad.to(x[0].device()), MaskPolarity::TrueBlocked));
        return out({o1, w1, o2, w2});
      },
      1e-4);
  v.back().half_floor = 1;  // chained bmm, softmax, tanh: each op within 1 ulp, carried on
  add_case(
      "cross_entropy with class weights and probability targets",
      [] {
        return in({rn({6, 5}), tensor(std::vector<int64_t>{1, 0, 4, 2, 2, 3}, {6}), rn({6, 5})});
      },
      [](const Inputs& x) {
        CrossEntropyOptions o;
        o.weight = tensor(std::vector<double>{0.5, 2, 1, 0.25, 1.5}, {5})
                       .to(x[0].dtype())
                       .to(x[0].device());
        o.label_smoothing = 0.1;
        return out({cross_entropy(x[0], x[1], o), cross_entropy(x[0], softmax(x[2], 1), o)});
      });
  return v;
}
}  // namespace

TEST_CASE("cuda parity: every op family, float32 and float64, forward and backward") {
  for (const ParityCase& c : cases()) {
    for (DType dt : {kFloat64, kFloat32}) {
      SECTION(c.name + " " + dtype_name(dt)) { tgt::run_parity(c, dt); }
    }
  }
}

// The same table in bfloat16 and float16: the device against the CPU in that dtype, within one
// unit in the last place (parity_harness.hpp, run_parity_reduced, says why one).
TEST_CASE("cuda parity: every op family in bfloat16 and float16, within 1 ulp of the CPU") {
  for (const ParityCase& c : cases()) {
    for (DType dt : {kBFloat16, kFloat16}) {
      SECTION(c.name + " " + dtype_name(dt)) { tgt::run_parity_reduced(c, dt); }
    }
  }
}

TEST_CASE("cuda parity: scatter_reduce amax and amin keep the CPU's zero on ties") {
  // std::max / std::min semantics on both backends: of equal values the earlier one stays, so the
  // sign of a zero result is the CPU's (PyTorch 1.13: amax of (-0, 0) without self is -0). The
  // parity harness compares values, not the signs of zeros; this compares the bits.
  for (DType dt : {kFloat64, kFloat32}) {
    const Tensor x = tensor(std::vector<double>{5, 5, 5, 5}, {1, 4}).to(dt);
    const Tensor src = tensor(std::vector<double>{-0.0, 0.0, 0.0, -0.0, -0.0, 0.0}, {1, 6}).to(dt);
    const Tensor idx = tensor(std::vector<int64_t>{0, 0, 1, 1, 2, 3}, {1, 6});
    for (const char* red : {"amax", "amin"}) {
      const std::vector<double> want =
          scatter_reduce(x, 1, idx, src, red, false).to_vector<double>();
      const std::vector<double> got =
          scatter_reduce(x.to(tgt::gpu()), 1, idx.to(tgt::gpu()), src.to(tgt::gpu()), red, false)
              .to_vector<double>();
      for (size_t e = 0; e < want.size(); ++e) {
        INFO(red << " " << dtype_name(dt) << " target " << e);
        CHECK(std::signbit(got[e]) == std::signbit(want[e]));
        CHECK(got[e] == want[e]);
      }
      CHECK(std::signbit(want[0]));  // -0 came first
      CHECK(!std::signbit(want[1]));
    }
  }
}

TEST_CASE("cuda parity: empty tensors") {
  Tensor a = zeros({0, 4}).to(tgt::gpu()), b = zeros({4, 3}).to(tgt::gpu());
  CHECK(matmul(a, b).shape() == Shape{0, 3});
  CHECK(sum(a).item<double>() == 0);
  CHECK(softmax(a, 1).numel() == 0);
  CHECK(add(a, 1.0).numel() == 0);
}

TEST_CASE("cuda parity: dropout keeps what the counter-based generator says") {
  manual_seed(5);
  Tensor x = ones({1000}).to(tgt::gpu()).requires_grad_();
  Tensor y = dropout(x, 0.3);
  std::vector<float> v = y.to_vector<float>();
  int64_t kept = 0;
  for (float e : v) {
    CHECK((e == 0.0f || std::fabs(e - 1.0f / 0.7f) < 1e-6f));
    kept += e != 0;
  }
  CHECK(kept > 620);
  CHECK(kept < 780);
  sum(y).backward();
  CHECK(x.grad().to_vector<float>() == v);  // d/dx = keep mask · scale = y for x = 1
  manual_seed(5);
  CHECK(dropout(ones({1000}).to(tgt::gpu()), 0.3).to_vector<float>() == v);  // seeded: repeats
}
