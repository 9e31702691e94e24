// tests/ops/test_cpu_copy.cpp — cpu::strided_copy (ops/shape/cpu/copy.cpp) against an index-by-index
// loop: permutes of every rank-4 order (row copies and the blocked transpose path, sizes not a
// multiple of its 32 tiles), stepped slices, expands (stride 0) and the scatter direction.
#include "helpers.hpp"
#include "ops/core/cpu/kernels.hpp"

#include <algorithm>
#include <numeric>

using namespace tg;

namespace {
// Element offset of flat index o of `shape` through `strides`.
int64_t offset_of(int64_t o, const Shape& shape, const Shape& strides) {
  int64_t off = 0;
  for (size_t d = shape.size(); d-- > 0;) {
    off += (o % shape[d]) * strides[d];
    o /= shape[d];
  }
  return off;
}
void check_gather(const Shape& shape, const Shape& xst, int64_t x_size) {
  std::vector<double> x(x_size);
  std::iota(x.begin(), x.end(), 1.0);
  const int64_t n = shape_numel(shape);
  std::vector<double> out(n, -1), want(n);
  cpu::strided_copy<double>(out.data(), contiguous_strides(shape), x.data(), xst, shape);
  for (int64_t o = 0; o < n; ++o) want[o] = x[offset_of(o, shape, xst)];
  INFO("shape " << shape_str(shape) << " strides " << shape_str(xst));
  REQUIRE(out == want);
}
}  // namespace

TEST_CASE("cpu strided_copy: every permute of a rank-4 tensor", "[cpu][shape]") {
  const Shape s = {3, 37, 5, 41};
  const Shape cs = contiguous_strides(s);
  std::vector<int64_t> perm = {0, 1, 2, 3};
  do {
    Shape os(4), st(4);
    for (int d = 0; d < 4; ++d) {
      os[d] = s[perm[d]];
      st[d] = cs[perm[d]];
    }
    check_gather(os, st, shape_numel(s));
  } while (std::next_permutation(perm.begin(), perm.end()));
}

TEST_CASE("cpu strided_copy: slices with steps, expands and transposes", "[cpu][shape]") {
  check_gather({7, 9}, {40, 3}, 400);        // every 3rd column of a (10, 40) matrix
  check_gather({70, 33}, {1, 70}, 70 * 33);  // transpose, tiles not dividing the sizes
  check_gather({2, 65, 64}, {64 * 65, 1, 65}, 2 * 64 * 65);
  check_gather({4, 6, 5}, {0, 5, 1}, 30);  // expand a leading dim
  check_gather({4, 6, 5}, {5, 0, 1}, 20);  // expand a middle dim
  check_gather({4, 6, 5}, {1, 0, 0}, 4);   // expand the trailing dims
  check_gather({1, 1, 1}, {0, 0, 0}, 1);
}

TEST_CASE("cpu strided_copy: scatter into a strided destination", "[cpu][shape]") {
  const Shape shape = {5, 7};
  std::vector<double> g(35), dx(80, 0);
  std::iota(g.begin(), g.end(), 1.0);
  cpu::strided_copy<double>(dx.data() + 3, {16, 2}, g.data(), contiguous_strides(shape), shape);
  for (int64_t i = 0; i < 5; ++i)
    for (int64_t j = 0; j < 7; ++j) REQUIRE(dx[3 + i * 16 + j * 2] == g[i * 7 + j]);
  REQUIRE(std::count(dx.begin(), dx.end(), 0.0) == 80 - 35);
}
