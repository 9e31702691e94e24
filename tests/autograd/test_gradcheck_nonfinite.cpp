// tests/autograd/test_gradcheck_nonfinite.cpp — a gradcheck that meets NaN or inf says why: the
// function's output is NaN at the input itself (cross_entropy with every target ignored: 0/0),
// or the function is finite at the input but NaN at x ± eps (sqrt next to 0).
#include "tests/helpers.hpp"

#include <string>

using namespace tg;

namespace {
bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}
}  // namespace

TEST_CASE("gradcheck: every target ignored -> the report says the output is nan at the input",
          "[gradcheck]") {
  manual_seed(2);
  Tensor x = tgt::leaf({2, 5});
  Tensor t = tensor(std::vector<int64_t>{3, 3});
  CrossEntropyOptions o;
  o.ignore_index = 3;  // both rows ignored: the mean is 0/0
  GradcheckReport r =
      gradcheck([t, o](const std::vector<Tensor>& in) { return cross_entropy(in[0], t, o); }, {x});
  INFO(r.str());
  REQUIRE_FALSE(r.passed);
  REQUIRE(r.output_nonfinite == 1);
  REQUIRE(r.first_nonfinite_output == 0);
  REQUIRE(std::isnan(r.first_nonfinite_value));
  REQUIRE(r.notes().size() == 1);
  REQUIRE(has(r.notes()[0], "the function returned nan at the input: 1 of 1 output element(s)"));
  REQUIRE(has(r.notes()[0], "cross_entropy with every target ignored"));
  REQUIRE(has(r.str(), "  NOTE the function returned nan at the input"));
  // The same in fast mode.
  GradcheckOptions fast;
  fast.mode = GradcheckMode::Fast;
  GradcheckReport f = gradcheck(
      [t, o](const std::vector<Tensor>& in) { return cross_entropy(in[0], t, o); }, {x}, fast);
  REQUIRE(has(f.str(), "NOTE the function returned nan at the input"));
}

TEST_CASE("gradcheck: a function NaN at x - eps only -> the report names the domain edge",
          "[gradcheck]") {
  // sqrt at 1e-7 with eps 1e-6: f(x) finite, f(x - eps) = sqrt(-9e-7) = nan.
  Tensor x = tensor(std::vector<double>{1e-7, 4.0}).requires_grad_();
  GradcheckReport r = gradcheck([](const std::vector<Tensor>& in) { return sqrt(in[0]); }, {x});
  INFO(r.str());
  REQUIRE_FALSE(r.passed);
  REQUIRE(r.output_nonfinite == 0);
  REQUIRE(r.inputs[0].nonfinite_numerical == 1);
  REQUIRE(r.inputs[0].nonfinite_analytical == 0);
  REQUIRE(r.notes().size() == 1);
  REQUIRE(has(r.notes()[0], "input 0: 1 numerical entry is not finite"));
  REQUIRE(has(r.notes()[0], "edge of its domain"));
  // A passing check has no note.
  Tensor y = tensor(std::vector<double>{1.0, 4.0}).requires_grad_();
  GradcheckReport ok = gradcheck([](const std::vector<Tensor>& in) { return sqrt(in[0]); }, {y});
  REQUIRE(ok.passed);
  REQUIRE(ok.notes().empty());
}
