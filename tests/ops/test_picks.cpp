// tests/ops/test_picks.cpp — diagonal, diag, unfold, nonzero (ops/shape/diagonal.cpp) and einsum
// (ops/matmul/einsum.cpp): shapes and values by hand, edge cases (offsets past the matrix, empty
// results, 0-dim), float64 gradchecks, errors naming the equation or the shapes. PyTorch's values
// and gradients: test_parity.cpp (picks and einsum families).
#include "helpers.hpp"

using namespace tg;

TEST_CASE("diagonal, diag, unfold: shapes and values", "[picks]") {
  Tensor m = arange(12, kFloat64).reshape({3, 4});
  tgt::require_close(diagonal(m), tensor(std::vector<double>{0, 5, 10}, {3}), 0, 0, "main");
  tgt::require_close(diagonal(m, 2), tensor(std::vector<double>{2, 7}, {2}), 0, 0, "offset 2");
  tgt::require_close(diagonal(m, -1), tensor(std::vector<double>{4, 9}, {2}), 0, 0, "offset -1");
  REQUIRE(diagonal(m, 9).shape() == Shape{0});  // past the matrix: empty
  Tensor d = diag(tensor(std::vector<double>{1, 2}, {2}), 1);
  tgt::require_close(d, tensor(std::vector<double>{0, 1, 0, 0, 0, 2, 0, 0, 0}, {3, 3}), 0, 0,
                     "diag of a vector, k 1");
  Tensor u = unfold(arange(7, kFloat64), 0, 3, 2);
  tgt::require_close(u, tensor(std::vector<double>{0, 1, 2, 2, 3, 4, 4, 5, 6}, {3, 3}), 0, 0,
                     "unfold");
  REQUIRE(unfold(zeros({2, 5, 3}, kFloat64), 1, 2, 2).shape() == Shape{2, 2, 3, 2});
  REQUIRE_ERROR(diagonal(zeros({3}, kFloat64)), "diagonal: x (3) needs at least 2 dims");
  REQUIRE_ERROR(diagonal(m, 0, 1, -1), "diagonal: dim1 1 and dim2 -1 are the same dim of x (3,4)");
  REQUIRE_ERROR(diag(zeros({2, 2, 2}, kFloat64)), "diag: x (2,2,2) must be 1-D");
  REQUIRE_ERROR(unfold(m, 1, 5, 1), "unfold: size 5 must be in [0, 4] (dim 1 of x (3,4))");
  REQUIRE_ERROR(unfold(m, 1, 2, 0), "and step 0 >= 1");
  manual_seed(170);
  Tensor x = tgt::leaf({3, 4, 5});
  tgt::check_grad([](const std::vector<Tensor>& in) { return diagonal(in[0], 1, 2, 0); }, {x},
                  "diagonal");
  tgt::check_grad([](const std::vector<Tensor>& in) { return unfold(in[0], 1, 2, 1); }, {x},
                  "unfold");
  tgt::check_grad([](const std::vector<Tensor>& in) { return diag(in[0], -2); }, {tgt::leaf({3})},
                  "diag");
  tgt::check_grad([](const std::vector<Tensor>& in) { return unfold(in[0], 2, 2, 3); }, {x},
                  "unfold, windows apart");
  tgt::check_grad(
      [](const std::vector<Tensor>& in) { return unfold(diagonal(in[0], 0, 0, 2), 1, 3, 1); }, {x},
      "unfold of a diagonal view");
}

TEST_CASE("diagonal and unfold are views, as in PyTorch: writes reach the input", "[picks]") {
  // PyTorch 1.13: m = zeros(3, 4); m.diagonal(1).fill_(7) sets (0,1), (1,2), (2,3)
  Tensor m = zeros({3, 4}, kFloat64);
  Tensor dv = diagonal(m, 1);
  CHECK(dv.strides() == Shape{5});
  fill_(dv, 7.0);
  tgt::require_close(m, tensor(std::vector<double>{0, 7, 0, 0, 0, 0, 7, 0, 0, 0, 0, 7}, {3, 4}), 0,
                     0, "m after m.diagonal(1).fill_(7)");
  // dims swapped, offset -1: (dim1 = i + 1, dim2 = i), the same elements (PyTorch: all 8)
  add_(diagonal(m, -1, 1, 0), 1.0);
  tgt::require_close(m, tensor(std::vector<double>{0, 8, 0, 0, 0, 0, 8, 0, 0, 0, 0, 8}, {3, 4}), 0,
                     0, "m after m.diagonal(-1, 1, 0).add_(1)");
  // unfold(0, 2, 3) of arange(8): windows [0,1], [3,4], [6,7]; strides (3, 1), x's storage
  Tensor x = arange(8, kFloat64);
  Tensor u = unfold(x, 0, 2, 3);
  CHECK(u.strides() == Shape{3, 1});
  fill_(select(u, 0, 1), -1.0);
  tgt::require_close(x, tensor(std::vector<double>{0, 1, 2, -1, -1, 5, 6, 7}, {8}), 0, 0,
                     "x after a window of its unfold was filled");
  // torch.diag of a matrix copies
  Tensor c = diag(m);
  fill_(c, 5.0);
  CHECK(m.to_vector<double>()[0] == 0);
  REQUIRE(unfold(scalar_tensor(3.0, kFloat64), 0, 1, 1).shape() == Shape{1});
}

TEST_CASE("nonzero: row-major positions, NaN counts, no gradient", "[picks]") {
  Tensor x = tensor(std::vector<double>{0, 1.5, 0, -2, std::nan(""), 0}, {2, 3});
  Tensor nz = nonzero(x);
  REQUIRE(nz.shape() == Shape{3, 2});
  REQUIRE(nz.to_vector<int64_t>() == std::vector<int64_t>{0, 1, 1, 0, 1, 1});
  REQUIRE(nonzero(zeros({4}, kFloat64)).shape() == Shape{0, 1});
  REQUIRE(nonzero(full({}, 2.0, kFloat64)).shape() == Shape{1, 0});
  REQUIRE(nonzero(tensor(std::vector<bool>{true, false, true}, {3})).to_vector<int64_t>() ==
          std::vector<int64_t>{0, 2});
}

TEST_CASE("einsum: contractions, broadcasting, diagonals, gradchecks, errors", "[einsum]") {
  manual_seed(171);
  Tensor a = randn({3, 4}, kFloat64), b = randn({4, 5}, kFloat64);
  tgt::require_close(einsum("ij,jk->ik", {a, b}), matmul(a, b), 1e-14, 0, "matmul");
  tgt::require_close(einsum("ij -> ji", {a}), a.transpose(0, 1), 0, 0, "transpose, spaces");
  tgt::require_close(einsum("ij->", {a}), sum(a), 1e-14, 0, "sum");
  Tensor sq = randn({4, 4}, kFloat64);
  tgt::require_close(einsum("ii", {sq}), sum(diagonal(sq)), 1e-14, 0, "trace");
  // three operands with a broadcast batch letter of size 1
  Tensor x = tgt::leaf({2, 1, 3}), y = tgt::leaf({4, 3}), z = tgt::leaf({2, 4});
  tgt::check_grad([](const std::vector<Tensor>& in) { return einsum("abc,dc,ad->abd", in); },
                  {x, y, z}, "einsum three operands");
  tgt::check_grad([](const std::vector<Tensor>& in) { return einsum("...ij,jk", in); },
                  {tgt::leaf({2, 3, 4}), tgt::leaf({4, 2})}, "einsum ellipsis implicit");
  tgt::check_grad([](const std::vector<Tensor>& in) { return einsum("iji->j", in); },
                  {tgt::leaf({3, 2, 3})}, "einsum diagonal");
  REQUIRE_ERROR(einsum("ij,jk->ik", {a}),
                "einsum: \"ij,jk->ik\": 2 subscript groups for 1 operands");
  REQUIRE_ERROR(einsum("ij,jk->ik", {a, randn({5, 5}, kFloat64)}),
                "letter 'j' is 5 in operand 1 (5,5) but 4 before");
  REQUIRE_ERROR(einsum("ijk->i", {a}), "operand 0 (3,4) has 2 dims but its subscripts name 3");
  REQUIRE_ERROR(einsum("ij->iz", {a}), "output letter 'z' names no input dim");
  REQUIRE_ERROR(einsum("i1->i", {a}), "'1' is not a letter or \"...\"");
}
