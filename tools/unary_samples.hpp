// tools/unary_samples.hpp — the unary list (ops/kern/unary_list.inc) as rows the tests and tools
// expand: each op's name, code, input domain, sample call and the kernel parameters that call
// passes. gradcheck's unary cases (tools/gradcheck/cases.cpp), the CUDA parity rows
// (tests/cuda/test_parity_ops.cpp) and the special-value rows (tests/ops/test_special_values.cpp)
// come from here, so a new list line is checked everywhere at once. Header only; no reference
// values here (each test keeps its own).
#pragma once

#include "autograd/tape.hpp"
#include "ops/kern/unary_formulas.hpp"
#include "ops/ops.hpp"

#include <string>
#include <vector>

namespace tgu {

// The tg function a sample call calls: "tg::gelu(x, \"tanh\")" → "gelu".
inline std::string call_op(const std::string& call) {
  const size_t at = call.rfind("tg::", call.find('(')) + 4;
  return call.substr(at, call.find('(') - at);
}

struct UnarySample {
  const char* name;
  std::string op_name;  // the public function the sample calls
  tg::kern::UnOp op;
  tg::kern::UnDomain domain;
  tg::Tensor (*call)(const tg::Tensor& x);
  double p0, p1;
};

inline const std::vector<UnarySample>& unary_samples() {
  static const std::vector<UnarySample> rows = {
#define X(Code, name, torch, reads, grad, fn, domain, call, p0, p1) \
  {#name,                                                           \
   call_op(#call),                                                  \
   tg::kern::UnOp::Code,                                            \
   tg::kern::UnDomain::domain,                                      \
   [](const tg::Tensor& x) -> tg::Tensor { return call; },          \
   double(p0),                                                      \
   double(p1)},
#include "ops/kern/unary_list.inc"
#undef X
  };
  return rows;
}

// The domains, each a group of rows (the CUDA parity suite runs one case per domain).
constexpr tg::kern::UnDomain kDomains[] = {tg::kern::UnDomain::kAny, tg::kern::UnDomain::kPositive,
                                           tg::kern::UnDomain::kUnit,
                                           tg::kern::UnDomain::kAboveOne};

// The domain in words, for case names.
inline const char* domain_name(tg::kern::UnDomain d) {
  using D = tg::kern::UnDomain;
  return d == D::kPositive   ? "positive x"
         : d == D::kUnit     ? "x in (-0.9, 0.9)"
         : d == D::kAboveOne ? "x above 1"
                             : "any x";
}

// An input in domain d made from a N(0, 1) sample r (same shape and dtype): any (r), positive
// (|r| + 0.5), unit (0.9·tanh(r), inside (-0.9, 0.9)) or above one (|r| + 1.1).
inline tg::Tensor in_domain(const tg::Tensor& r, tg::kern::UnDomain d) {
  using D = tg::kern::UnDomain;
  tg::NoGradGuard ng;
  if (d == D::kPositive) return tg::add(tg::abs(r), 0.5);
  if (d == D::kUnit) return tg::mul(tg::tanh(r), 0.9);
  if (d == D::kAboveOne) return tg::add(tg::abs(r), 1.1);
  return r.clone();
}

}  // namespace tgu
