// tests/ops/indexing_cases.hpp — the PyTorch-parity table runner of the indexing family
// (test_indexing.cpp, test_advanced_indexing.cpp): a case names its inputs, read from
// tests/fixtures/indexing/<case>.safetensors (tools/make_indexing_fixtures.py), and computes
// outputs; check_case compares "out" (and topk/sort's "indices") and the gradients "d<arg>" after
// a backward with "dout". Not here: the cases themselves.
#pragma once

#include "fixtures.hpp"
#include "helpers.hpp"

#include <functional>
#include <string>
#include <vector>

namespace tgt {
using tg::Tensor;

// Tensor `name` of tests/fixtures/indexing/<c>.safetensors.
inline Tensor fixture(const std::string& c, const std::string& name) {
  return Fixture("indexing/" + c).tensor(name);
}

// A case returns its output and, for topk/sort, the indices as a second tensor.
using IndexingFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
struct IndexingCase {
  std::string name;
  std::vector<std::string> args;
  IndexingFn fn;
};

inline std::vector<Tensor> one(Tensor t) { return {std::move(t)}; }

// Loads the case's tensor <arg> for every arg (float ones converted to dtype, as leaves), runs the
// case and compares "out" (dtype and values), "indices" exactly, and, for a float output, the
// gradients "d<arg>" after a backward with "dout".
inline void check_case(const IndexingCase& c, tg::DType dtype, double atol, double rtol) {
  std::vector<Tensor> ins;
  for (const std::string& a : c.args) {
    Tensor t = fixture(c.name, a);
    if (tg::is_floating(t.dtype())) t = t.to(dtype).detach().requires_grad_();
    ins.push_back(t);
  }
  std::vector<Tensor> out = c.fn(ins);
  const std::string what = c.name + " (" + tg::dtype_name(dtype) + ")";
  Tensor want = fixture(c.name, "out");
  INFO(what);
  REQUIRE(out[0].dtype() == (tg::is_floating(want.dtype()) ? dtype : want.dtype()));
  require_close(out[0], want, atol, rtol, what + " out");
  if (out.size() > 1) {
    REQUIRE(out[1].dtype() == tg::kInt64);
    require_close(out[1], fixture(c.name, "indices"), 0, 0, what + " indices");
  }
  if (!tg::is_floating(want.dtype()) || !out[0].requires_grad()) return;
  out[0].backward(fixture(c.name, "dout").to(dtype));
  for (size_t i = 0; i < c.args.size(); ++i) {
    if (!ins[i].requires_grad()) continue;
    require_close(ins[i].grad(), fixture(c.name, "d" + c.args[i]), atol, rtol,
                  what + " d" + c.args[i]);
  }
}

}  // namespace tgt
