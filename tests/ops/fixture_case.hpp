// tests/ops/fixture_case.hpp — one PyTorch fixture case (tests/fixtures/<family>/<case>) run
// through a tapegrad expression: the output's dtype, shape and values, then, after a backward
// with the case's "dout", the gradient of every float input. Values compare equal when both are
// NaN or the same infinity (corner cases keep them), else within rtol. For the corner families
// of tools/make_reduce_fixtures.py (test_reduce.cpp, test_scan.cpp, test_softmax.cpp,
// test_losses.cpp, test_einsum.cpp); test_parity.cpp keeps its own float32 + float64 runner.
#pragma once

#include "fixtures.hpp"
#include "helpers.hpp"

#include <functional>
#include <string>
#include <vector>

namespace tgt {

using CaseFn = std::function<tg::Tensor(const std::vector<tg::Tensor>&)>;

inline void require_fixture_case(const std::string& id, const std::vector<std::string>& args,
                                 const CaseFn& fn, double rtol = 1e-12) {
  INFO("fixture " << id);
  const Fixture f(id);
  std::vector<tg::Tensor> ins;
  for (const std::string& a : args) {
    tg::Tensor t = f.tensor(a);
    if (tg::is_floating(t.dtype())) t.requires_grad_();
    ins.push_back(t);
  }
  tg::Tensor out = fn(ins);
  const tg::Tensor want = f.tensor("out");
  REQUIRE(tg::dtype_name(out.dtype()) == tg::dtype_name(want.dtype()));
  REQUIRE(out.shape() == want.shape());
  require_near(out.to(tg::kFloat64).to_vector<double>(), want.to(tg::kFloat64).to_vector<double>(),
               rtol, 1e-14, id + " out");
  if (!f.has("dout")) return;
  out.backward(f.tensor("dout"));
  for (size_t i = 0; i < args.size(); ++i) {
    if (!ins[i].requires_grad()) continue;
    const tg::Tensor d = f.tensor("d" + args[i]);
    REQUIRE(ins[i].grad().shape() == d.shape());
    require_near(ins[i].grad().to_vector<double>(), d.to_vector<double>(), rtol, 1e-15,
                 id + " d" + args[i]);
  }
}

}  // namespace tgt
