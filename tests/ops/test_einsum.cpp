// tests/ops/test_einsum.cpp — einsum (ops/matmul/einsum.cpp) beyond its float fixtures (test_parity.cpp)
// and hand checks (test_picks.cpp): int64 and bool operands against PyTorch
// (tests/fixtures/einsum_int, tools/make_reduce_fixtures.py), and PyTorch's refusals (a repeated
// letter of two sizes, a stray '.', mixed dtypes), each message naming einsum, the equation and
// every operand's shape.
#include "fixture_case.hpp"
#include "helpers.hpp"

#include <string>
#include <vector>

using namespace tg;

TEST_CASE("einsum on int64 and bool operands matches PyTorch", "[einsum]") {
  auto ein = [](const std::string& eq) {
    return [eq](const std::vector<Tensor>& in) { return einsum(eq, in); };
  };
  tgt::require_fixture_case("einsum_int/int64_mm", {"x0", "x1"}, ein("ij,jk->ik"));
  tgt::require_fixture_case("einsum_int/int64_trace", {"x0"}, ein("ii"));
  tgt::require_fixture_case("einsum_int/int64_ellipsis", {"x0", "x1"}, ein("...ij,...jk->...ik"));
  tgt::require_fixture_case("einsum_int/int64_three", {"x0", "x1", "x2"}, ein("abc,cd,de->abe"));
  tgt::require_fixture_case("einsum_int/int64_wraps", {"x0", "x1"}, ein("i,i->"));  // mod 2^64
  // bool: int64 counts when a letter is summed, bool when none is
  tgt::require_fixture_case("einsum_int/bool_sum", {"x0"}, ein("ij->i"));
  tgt::require_fixture_case("einsum_int/bool_partial_sum", {"x0", "x1"}, ein("ij,j->j"));
  tgt::require_fixture_case("einsum_int/bool_diag", {"x0"}, ein("ii->i"));
  tgt::require_fixture_case("einsum_int/bool_outer", {"x0", "x1"}, ein("i,j->ij"));
  tgt::require_fixture_case("einsum_int/bool_hadamard", {"x0", "x1"}, ein("ij,ij->ji"));
  // a bool contraction (torch 1.13 refuses it from inside bmm) counts, as the sums do
  const Tensor a = tensor(std::vector<bool>{true, false, true, true}, {2, 2});
  const Tensor r = einsum("ij,jk->ik", {a, a});
  CHECK(r.dtype() == kInt64);
  CHECK(r.to_vector<int64_t>() == std::vector<int64_t>{1, 0, 2, 1});
  CHECK(einsum("ij,jk->ik", {zeros({2, 0}, kInt64), zeros({0, 3}, kInt64)}).to_vector<int64_t>() ==
        std::vector<int64_t>(6, 0));
}

TEST_CASE("einsum refuses what PyTorch refuses, naming the equation and the operands", "[einsum]") {
  const Tensor x = zeros({1, 3}, kFloat64), y = zeros({2, 3}, kFloat64);
  // a repeated letter takes a diagonal: its sizes must be equal, no broadcasting of a 1
  REQUIRE_ERROR(einsum("ii->i", {x}),
                "einsum: \"ii->i\": letter 'i' is repeated in operand 0 (1,3) with sizes 1 and 3 "
                "(operands (1,3))");
  REQUIRE_ERROR(einsum("ii->i", {zeros({3, 1})}), "with sizes 3 and 1");
  // across operands a 1 broadcasts, as PyTorch
  CHECK(einsum("ij,ij->i", {x, y}).shape() == Shape{2});
  // dots: one "..." per subscript group, no stray '.'
  REQUIRE_ERROR(
      einsum("....i->i", {y}),
      "einsum: \"....i->i\": operand 0's subscripts \"....i\" has a '.' that is not part of "
      "\"...\" (operands (2,3))");
  REQUIRE_ERROR(einsum("...i...->i", {y}), "operand 0's subscripts \"...i...\" has more than one");
  REQUIRE_ERROR(einsum(".i->i", {zeros({3})}), "has a '.' that is not part of \"...\"");
  REQUIRE_ERROR(einsum("...i->...i.", {y}),
                "the output \"...i.\" has a '.' that is not part of \"...\"");
  REQUIRE_ERROR(einsum("ij,jk", {y, zeros({3, 2}, kInt64)}),
                "einsum: \"ij,jk\": operands must share one dtype and device, got dtypes float64, "
                "int64 (convert with .to()) (operands (2,3), (3,2))");
  REQUIRE_ERROR(einsum("ij,jk", {y, zeros({3, 2}, kFloat32)}), "got dtypes float64, float32");
  REQUIRE_ERROR(einsum("i,i", {zeros({2}, kBool), zeros({2}, kInt64)}), "got dtypes bool, int64");
  REQUIRE_ERROR(einsum("ij,jk", {y, Tensor()}),
                "an operand is undefined (operands (2,3), undefined)");
  REQUIRE_ERROR(einsum("ij,jk->ik", {y, zeros({4, 2}, kFloat64)}),
                "letter 'j' is 4 in operand 1 (4,2) but 3 before (operands (2,3), (4,2))");
  REQUIRE_ERROR(einsum("ij", {}), "einsum: \"ij\": no operands");
}
