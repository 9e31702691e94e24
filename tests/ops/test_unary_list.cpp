// tests/ops/test_unary_list.cpp — the unary list (ops/kern/unary_list.inc) and what it generates
// agree: one enumerator, one info row and one Formula per line, in order, names unique; each
// line's public function runs its kernels forward, backward and under create_graph on both float
// dtypes, finite on its domain, the two gradients equal; the rows the tests and tools expand
// (tools/unary_samples.hpp) are the list's, each in a domain the CUDA parity suite runs. The
// gradcheck cases are checked by tests/tools (check_unary_list.cmake), the special-value rows by
// test_special_values.cpp ("every line of the unary list has a special-value row"); the second
// order of every line here, by gradgradcheck.
// Deliberately not here: the values themselves (test_special_values.cpp, gradcheck, parity).
#include <catch2/catch.hpp>

#include "helpers.hpp"

#include "autograd/tape.hpp"
#include "ops/kern/unary_formulas.hpp"
#include "ops/ops.hpp"
#include "tools/unary_samples.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

using tg::Tensor;
namespace kern = tg::kern;

TEST_CASE("the unary list: one enumerator, one info row and one sample per line, in order") {
  const auto& rows = tgu::unary_samples();
  REQUIRE(static_cast<int>(rows.size()) == kern::kUnaryCount);
  std::set<std::string> names;
  for (int i = 0; i < kern::kUnaryCount; ++i) {
    const kern::UnInfo& info = kern::kUnaryInfo[i];
    INFO("line " << i << ": " << info.name);
    CHECK(static_cast<int>(info.op) == i);
    CHECK(&kern::unary_info(info.op) == &info);
    CHECK(std::string(rows[i].name) == info.name);
    CHECK(rows[i].op == info.op);
    CHECK(names.insert(info.name).second);
    // a zero-gradient op reads nothing; the parity suite runs every domain of the list
    if (info.grad == kern::UnGrad::kZero) CHECK(info.reads == kern::UnReads::kNone);
    CHECK(std::count(std::begin(tgu::kDomains), std::end(tgu::kDomains), info.domain) == 1);
  }
}

namespace {
// out = the sample call on x; dx its gradient for ones, first order and under create_graph.
template <typename T>
void run_sample(const tgu::UnarySample& u) {
  tg::manual_seed(7);
  const Tensor r = tg::randn({2, 37}, tg::kFloat64);
  const Tensor x = tgu::in_domain(r, u.domain).to(sizeof(T) == 4 ? tg::kFloat32 : tg::kFloat64);
  Tensor a = x.detach().requires_grad_();
  Tensor y = u.call(a);
  REQUIRE(y.shape() == x.shape());
  y.sum().backward();
  const Tensor d1 = a.grad();
  Tensor b = x.detach().requires_grad_();
  tg::GradOptions opts;
  opts.create_graph = true;
  const Tensor d2 = tg::grad({u.call(b).sum()}, {b}, {}, opts)[0];
  REQUIRE(d1.defined());
  REQUIRE(d2.defined());
  const auto g1 = d1.template to_vector<T>(), g2 = d2.template to_vector<T>();
  const auto xv = x.template to_vector<T>(), yv = y.template to_vector<T>();
  const T tol = sizeof(T) == 4 ? T(1e-4) : T(1e-10);
  for (size_t i = 0; i < xv.size(); ++i) {
    INFO(u.name << " x=" << xv[i] << ": y " << yv[i] << ", dx " << g1[i] << " / " << g2[i]);
    REQUIRE(std::isfinite(yv[i]));
    REQUIRE(std::isfinite(g1[i]));
    REQUIRE(std::fabs(g1[i] - g2[i]) <= tol * (1 + std::fabs(g1[i])));
  }
}
}  // namespace

TEMPLATE_TEST_CASE("every line of the unary list runs forward, backward and under create_graph",
                   "[unary]", float, double) {
  for (const tgu::UnarySample& u : tgu::unary_samples()) {
    INFO("unary list line " << u.name << " (" << u.op_name << ")");
    run_sample<TestType>(u);
  }
}

// The create_graph backward (each Formula on tg::Tensor) differentiates again.
TEST_CASE("every line of the unary list passes gradgradcheck in float64", "[unary]") {
  tg::manual_seed(11);
  for (const tgu::UnarySample& u : tgu::unary_samples()) {
    const Tensor x = tgu::in_domain(tg::randn({7}, tg::kFloat64), u.domain).requires_grad_();
    tgt::check_second_order(u.name, [f = u.call](auto& in) { return f(in[0]); }, {x});
  }
}
