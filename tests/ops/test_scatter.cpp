// tests/ops/test_scatter.cpp — scatter and scatter_reduce (ops/scatter.cpp) beyond the PyTorch
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
