// tests/helpers.hpp — shared checks: gradcheck with the report printed on failure, value
// comparison that prints the first differing elements, and error-message matching.
#pragma once

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "autograd/gradcheck.hpp"
#include "autograd/tape.hpp"
#include "ops/ops.hpp"

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <cmath>
#include <string>
#include <vector>

namespace tgt {

// A 1-D float64 tensor of these values (edge-case tables: vec({0, -0.0, inf})).
inline tg::Tensor vec(const std::vector<double>& v) {
  return tg::tensor(v, {static_cast<int64_t>(v.size())});
}

// Random float64 leaf that requires grad (seeded by the caller through tg::manual_seed).
inline tg::Tensor leaf(const tg::Shape& s, double scale = 1.0) {
  tg::Tensor t = tg::randn(s, tg::kFloat64);
  if (scale != 1.0) {
    double* p = t.data<double>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] *= scale;
  }
  t.requires_grad_();
  return t;
}

// Runs tg::gradcheck and fails with the full report.
inline void check_grad(const tg::GradcheckFn& fn, const std::vector<tg::Tensor>& inputs,
                       const std::string& what, tg::GradcheckOptions opts = {}) {
  tg::GradcheckReport r = tg::gradcheck(fn, inputs, opts);
  INFO(what << "\n" << r.str());
  REQUIRE(r.passed);
}

// got[k] equals want[k] (also both NaN, or the same infinity) or is within atol + rtol·|want|;
// on failure prints `what`, the first differences and the max difference. For kernel tests that
// compare raw buffers with a double reference.
template <typename T>
void require_near(const std::vector<T>& got, const std::vector<double>& want, double rtol,
                  double atol, const std::string& what) {
  INFO(what);
  REQUIRE(got.size() == want.size());
  std::string first;
  int bad = 0;
  double maxd = 0;
  for (size_t k = 0; k < got.size(); ++k) {
    const double a = static_cast<double>(got[k]), b = want[k];
    const bool same = a == b || (std::isnan(a) && std::isnan(b));
    const double d = std::fabs(a - b);
    if (!same && !(d <= atol + rtol * std::fabs(b))) {
      if (bad++ < 5) first += fmt::format("  [{}] got {:.17g} want {:.17g}\n", k, a, b);
      maxd = std::max(maxd, d);
    }
  }
  INFO("first differences:\n" << first << "max |diff| " << maxd);
  REQUIRE(bad == 0);
}

// Elementwise |a - b| <= atol + rtol·|b|; prints op, shapes, first differences and max diff.
inline void require_close(const tg::Tensor& a, const std::vector<double>& b, double atol = 1e-6,
                          double rtol = 1e-5, const std::string& what = "") {
  std::vector<double> av = a.to_vector<double>();
  INFO(what << " shape " << tg::shape_str(a.shape()));
  REQUIRE(av.size() == b.size());
  double maxd = 0;
  std::string first;
  int shown = 0;
  for (size_t i = 0; i < av.size(); ++i) {
    double d = std::fabs(av[i] - b[i]);
    bool bad = !(d <= atol + rtol * std::fabs(b[i])) && !(std::isnan(av[i]) && std::isnan(b[i]));
    if (bad && shown < 5) {
      first += fmt::format("  [{}] got {:.10g} want {:.10g}\n", i, av[i], b[i]);
      ++shown;
    }
    if (bad || d > maxd) maxd = std::max(maxd, d);
  }
  INFO("first differences:\n" << first << "max |diff| " << maxd);
  REQUIRE(shown == 0);
}
inline void require_close(const tg::Tensor& a, const tg::Tensor& b, double atol = 1e-6,
                          double rtol = 1e-5, const std::string& what = "") {
  REQUIRE(a.shape() == b.shape());
  require_close(a, b.to_vector<double>(), atol, rtol, what);
}

}  // namespace tgt

// Matches a tg::Error whose message contains a substring (Catch's Contains matches strings only).
namespace tgt {
class ErrorContains : public Catch::MatcherBase<tg::Error> {
 public:
  explicit ErrorContains(std::string sub) : sub_(std::move(sub)) {}
  bool match(const tg::Error& e) const override {
    return std::string(e.what()).find(sub_) != std::string::npos;
  }
  std::string describe() const override { return "contains \"" + sub_ + "\""; }

 private:
  std::string sub_;
};
}  // namespace tgt
// Failure reports print the actual message.
namespace Catch {
template <>
struct StringMaker<tg::Error> {
  static std::string convert(const tg::Error& e) { return std::string("tg::Error: ") + e.what(); }
};
}  // namespace Catch

namespace tgt {
// Second order: fn's create_graph gradients (for a random output gradient) equal its first-order
// ones, and tg::gradgradcheck passes (tests/ops/test_gradgrad.cpp, test_attention_gradgrad.cpp).
inline void check_second_order(const std::string& name, const tg::GradcheckFn& fn,
                               const std::vector<tg::Tensor>& inputs) {
  INFO(name);
  std::vector<tg::Tensor> diff;
  for (const tg::Tensor& x : inputs)
    if (x.requires_grad()) diff.push_back(x);
  tg::Tensor out = fn(inputs);
  tg::Tensor v = tg::randn(out.shape(), tg::kFloat64);
  tg::GradOptions keep;
  keep.retain_graph = true;
  const std::vector<tg::Tensor> g1 = tg::grad({out}, diff, {v}, keep);
  tg::GradOptions cg;
  cg.create_graph = true;
  const std::vector<tg::Tensor> g2 = tg::grad({out}, diff, {v}, cg);
  for (size_t i = 0; i < diff.size(); ++i) {
    REQUIRE(g1[i].defined() == g2[i].defined());
    if (g1[i].defined()) require_close(g2[i], g1[i], 1e-12, 1e-10, name);
  }
  tg::GradcheckReport r = tg::gradgradcheck(fn, inputs);
  INFO(r.str());
  REQUIRE(r.passed);
}
// A fresh directory under the system temp dir (tg_<prefix>_XXXXXX), removed at the end of the test.
struct TempDir {
  std::string path;
  explicit TempDir(const std::string& prefix = "test") {
    std::string tmpl =
        (std::filesystem::temp_directory_path() / ("tg_" + prefix + "_XXXXXX")).string();
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string operator/(const std::string& name) const { return path + "/" + name; }
};
// A whole file's bytes (the test fails if it cannot be read).
inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

}  // namespace tgt

// REQUIRE_ERROR(expr, "substring"): expr throws tg::Error whose message contains the substring.
#define REQUIRE_ERROR(expr, substr) \
  REQUIRE_THROWS_MATCHES(expr, tg::Error, tgt::ErrorContains(substr))
