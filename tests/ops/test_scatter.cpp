// tests/ops/test_scatter.cpp — scatter and scatter_reduce (ops/index/scatter.cpp) beyond the PyTorch
// fixtures (test_parity.cpp, scatter family): a src larger than index (its uncovered part gets
// gradient 0), the last write winning a repeated target, float64 gradchecks of every reduction,
// errors.
#include "helpers.hpp"

using namespace tg;

TEST_CASE("scatter and scatter_reduce: larger src, repeated targets, gradchecks, errors",
          "[scatter]") {
  Tensor x = zeros({2, 4}, kFloat64);
  Tensor index = tensor(std::vector<int64_t>{1, 1, 3, 0}, {2, 2});
  Tensor src = arange(1, 7, 1, kFloat64).reshape({2, 3}).requires_grad_();  // 1..6, index 2 wide
  Tensor y = scatter(x, 1, index, src);
  // row 0 writes 1 then 2 at column 1 (the last wins); row 1 writes 4 at 3 and 5 at 0
  tgt::require_close(y, tensor(std::vector<double>{0, 2, 0, 0, 5, 0, 0, 4}, {2, 4}), 0, 0,
                     "scatter");
  y.backward(arange(8, kFloat64).reshape({2, 4}));
  // dsrc = gather(g) for the writes the output holds: 0 for the replaced one and src's third column
  tgt::require_close(src.grad(), tensor(std::vector<double>{0, 1, 0, 7, 4, 0}, {2, 3}), 0, 0,
                     "dsrc");
  tgt::require_close(scatter_reduce(x, 1, index, src.detach(), "sum"),
                     tensor(std::vector<double>{0, 3, 0, 0, 5, 0, 0, 4}, {2, 4}), 0, 0, "sum");
  tgt::require_close(scatter_reduce(full({2, 4}, 10.0, kFloat64), 1, index, src.detach(), "mean"),
                     tensor(std::vector<double>{10, 13.0 / 3, 10, 10, 7.5, 10, 10, 7}, {2, 4}),
                     1e-15, 0, "mean with self");
  manual_seed(220);
  Tensor xl = tgt::leaf({3, 5}), sl = tgt::leaf({3, 4});
  Tensor idx = tensor(std::vector<int64_t>{0, 2, 0, 4, 1, 1, 3, 1, 2, 4, 4, 0}, {3, 4});
  for (const char* r : {"sum", "mean", "amax", "amin", "prod"})
    for (bool self : {true, false})
      tgt::check_grad(
          [r, self, idx](const std::vector<Tensor>& in) {
            return scatter_reduce(in[0], 1, idx, in[1], r, self);
          },
          {xl, sl}, std::string("scatter_reduce ") + r + (self ? "" : " without self"));
  tgt::check_grad([idx](const std::vector<Tensor>& in) { return scatter(in[0], 1, idx, in[1]); },
                  {xl, sl}, "scatter");
  REQUIRE_ERROR(scatter_reduce(xl, 1, idx, sl, "max"),
                "scatter_reduce: reduce 'max' for x (3,5): expected sum, prod, mean, amax or amin");
  REQUIRE_ERROR(scatter(xl, 1, tensor(std::vector<int64_t>{9}, {1, 1}), sl),
                "index value 9 at [0,0] is out of range [0, 5)");
}

// Special values on long lines: src lines of every length 1..40 and 300 with 0, -0, ±inf, NaN
// and subnormals among ordinary values, folded into three targets per line (index t -> a
// scrambled target) by every reduction, with and without self, along the last dim and along dim
// 0 (strided lines), in float64 and float32, against a fold written out here in PyTorch's order
// (src order; NaN wins amax and amin; the first of equal zeros stays; the mean divides by the
// count). The zero signs are compared too (PyTorch 1.13: amax of (-0, 0) without self is -0).
TEST_CASE("scatter_reduce at special values on long lines, along both dims", "[scatter][special]") {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  for (DType dt : {kFloat64, kFloat32}) {
    const double sub = dt == kFloat64
                           ? std::numeric_limits<double>::denorm_min() * 7
                           : static_cast<double>(std::numeric_limits<float>::denorm_min() * 7);
    const double specials[] = {0.0, -0.0, inf, -inf, nan, sub, -sub, 1.5, -0.5, 2.0};
    auto rounded = [dt](double v) {
      return dt == kFloat64 ? v : static_cast<double>(static_cast<float>(v));
    };
    auto same = [](double a, double b) {
      if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
      return a == b && std::signbit(a) == std::signbit(b);
    };
    std::vector<int64_t> lengths;
    for (int64_t n = 1; n <= 40; ++n) lengths.push_back(n);
    lengths.push_back(300);
    const std::vector<double> self{0.75, -0.0, -2.0};
    // kind 0: mostly ordinary values, a special every 4th; kinds 1 and 2: zeros of both signs
    // among values below (above) them, so that amax (amin) meets its ties at zero
    const double below[] = {0.0, -0.0, -sub, -1.5}, above[] = {-0.0, 0.0, sub, 1.5};
    for (int64_t n : lengths)
      for (int kind : {0, 1, 2}) {
        std::vector<double> v(static_cast<size_t>(n));
        std::vector<int64_t> to(static_cast<size_t>(n));
        for (int64_t t = 0; t < n; ++t) {
          const size_t w = static_cast<size_t>((t * 3 + n) % 4);
          v[static_cast<size_t>(t)] = kind == 1    ? below[w]
                                      : kind == 2  ? above[w]
                                      : t % 4 == 1 ? specials[(t * 7 + n) % 10]
                                                   : rounded(0.9 + 0.01 * (t % 13));
          to[static_cast<size_t>(t)] = (t * 5 + t / 3) % 3;
        }
        for (int dim : {1, 0}) {
          // x (2, 3) / (3, 2), src and index (2, n) / (n, 2): the line in row / column 1; the other
          // line scatters 1s into target 0 of its own row / column
          auto laid = [dim](const std::vector<double>& line, int64_t len, double other) {
            std::vector<double> all(static_cast<size_t>(2 * len), other);
            for (int64_t t = 0; t < len; ++t)
              all[static_cast<size_t>(dim == 1 ? len + t : 2 * t + 1)] =
                  line[static_cast<size_t>(t)];
            return all;
          };
          auto shape = [dim](int64_t len) { return dim == 1 ? Shape{2, len} : Shape{len, 2}; };
          std::vector<int64_t> idx(static_cast<size_t>(2 * n), 0);
          for (int64_t t = 0; t < n; ++t)
            idx[static_cast<size_t>(dim == 1 ? n + t : 2 * t + 1)] = to[static_cast<size_t>(t)];
          const Tensor x = tensor(laid(self, 3, 1.0), shape(3)).to(dt);
          const Tensor src = tensor(laid(v, n, 1.0), shape(n)).to(dt);
          const Tensor index = tensor(idx, shape(n));
          for (const char* r : {"sum", "prod", "mean", "amax", "amin"})
            for (bool with_self : {true, false}) {
              const std::vector<double> all =
                  scatter_reduce(x, dim, index, src, r, with_self).to_vector<double>();
              const std::string red = r;
              for (int64_t j = 0; j < 3; ++j) {
                double o = self[static_cast<size_t>(j)];
                int64_t count = with_self ? 1 : 0;
                bool touched = false;
                for (int64_t t = 0; t < n; ++t) {
                  if (to[static_cast<size_t>(t)] != j) continue;
                  const double e = v[static_cast<size_t>(t)];
                  if (!touched && !with_self)
                    o = red == "prod" ? 1.0 : red == "amax" ? -inf : red == "amin" ? inf : 0.0;
                  touched = true;
                  ++count;
                  if (red == "sum" || red == "mean") o = rounded(o + e);
                  if (red == "prod") o = rounded(o * e);
                  if (red == "amax") o = std::isnan(o) || std::isnan(e) ? nan : std::max(o, e);
                  if (red == "amin") o = std::isnan(o) || std::isnan(e) ? nan : std::min(o, e);
                }
                if (red == "mean" && count > 1) o = rounded(o / static_cast<double>(count));
                const double got = all[static_cast<size_t>(dim == 1 ? 3 + j : 2 * j + 1)];
                INFO(dtype_name(dt) << " n " << n << " kind " << kind << " dim " << dim << " "
                                    << red << (with_self ? " with self" : "") << " target " << j
                                    << ": got " << got << " want " << o);
                CHECK(same(got, o));
              }
            }
        }
      }
  }
}
