// tools/gradcheck/builders.hpp — the small pieces every case builder uses (cases.cpp,
// shape_cases.cpp, index_cases.cpp, attention_cases.cpp): float64 leaves, a case of one or two
// inputs, several results joined into one output. Internal to the tool.
#pragma once

#include "tools/gradcheck/cases.hpp"

#include "autograd/tape.hpp"
#include "ops/ops.hpp"

#include <functional>
#include <string>
#include <vector>

namespace tgc {

// N(0, 1) float64 of shape s, requiring grad.
inline tg::Tensor leaf(const tg::Shape& s) { return tg::randn(s, tg::kFloat64).requires_grad_(); }
// |N(0,1)| + 0.5: for log, sqrt, rsqrt, pow's base and divisors.
inline tg::Tensor positive_leaf(const tg::Shape& s) {
  tg::NoGradGuard ng;
  return (tg::abs(tg::randn(s, tg::kFloat64)) + 0.5).detach().requires_grad_();
}
// Every result flattened and concatenated: one output for ops that give several, or for several
// variants of one op checked in one case.
inline tg::Tensor joined(const std::vector<tg::Tensor>& parts) {
  std::vector<tg::Tensor> flat;
  for (const tg::Tensor& p : parts) flat.push_back(tg::reshape(p, {-1}));
  return tg::cat(flat, 0);
}
inline BuiltCase one(tg::Tensor x, std::function<tg::Tensor(const tg::Tensor&)> f,
                     const char* name = "x") {
  return {[f](const std::vector<tg::Tensor>& in) { return f(in[0]); }, {x}, {name}, nullptr};
}
inline BuiltCase two(tg::Tensor x, tg::Tensor y,
                     std::function<tg::Tensor(const tg::Tensor&, const tg::Tensor&)> f,
                     const char* n0 = "a", const char* n1 = "b") {
  return {[f](const std::vector<tg::Tensor>& in) { return f(in[0], in[1]); },
          {x, y},
          {n0, n1},
          nullptr};
}
// The dim option when given (--dim), else fallback.
inline int64_t dim_or(const CaseArgs& a, int64_t fallback) {
  for (const auto& g : a.given)
    if (g.rfind("dim=", 0) == 0) return a.dim;
  return fallback;
}

}  // namespace tgc
