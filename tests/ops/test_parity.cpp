// tests/ops/test_parity.cpp — outputs and input gradients against PyTorch 1.13 reference values
// (tests/fixtures, written by tools/make_fixtures.py) for softmax, log_softmax, layer_norm, gelu
// cross_entropy and broadcasting matmul, in float64 (rtol 1e-10) and float32 (1e-5).
#include "helpers.hpp"

#include "autograd/io.hpp"

#include <functional>

using namespace tg;

namespace {
Tensor fixture(const std::string& name) {
  return load_npy(std::string(TG_FIXTURES) + "/" + name + ".npy");
}

using ParityFn = std::function<Tensor(const std::vector<Tensor>&)>;

// Loads <name>_<arg> for every arg, runs fn in `dtype`, and compares <name>_out and, after a
// backward with <name>_dout, <name>_d<arg> for every floating arg.
void check_parity(const std::string& name, const std::vector<std::string>& args, const ParityFn& fn,
                  DType dtype, double atol, double rtol) {
  std::vector<Tensor> ins;
  for (const std::string& a : args) {
    Tensor t = fixture(name + "_" + a);
    if (is_floating(t.dtype())) t = t.to(dtype).detach().requires_grad_();
    ins.push_back(t);
  }
  Tensor out = fn(ins);
  const std::string what = name + " (" + dtype_name(dtype) + ")";
  REQUIRE(out.dtype() == dtype);
  tgt::require_close(out, fixture(name + "_out"), atol, rtol, what + " out");
  out.backward(fixture(name + "_dout").to(dtype));
  for (size_t i = 0; i < args.size(); ++i) {
    if (!ins[i].requires_grad()) continue;
    tgt::require_close(ins[i].grad(), fixture(name + "_d" + args[i]), atol, rtol,
                       what + " d" + args[i]);
  }
}

struct ParityCase {
  std::string name;
  std::vector<std::string> args;
  ParityFn fn;
};

CrossEntropyOptions ce_opts(Reduction r, int64_t ignore = -100, double ls = 0) {
  CrossEntropyOptions o;
  o.reduction = r;
  o.ignore_index = ignore;
  o.label_smoothing = ls;
  return o;
}

ParityFn ce_fn(CrossEntropyOptions o) {
  return [o](const std::vector<Tensor>& in) { return cross_entropy(in[0], in[1], o); };
}

std::vector<ParityCase> cases() {
  return {
      {"softmax_dim1", {"x"}, [](const std::vector<Tensor>& in) { return softmax(in[0], 1); }},
      {"softmax_dim0", {"x"}, [](const std::vector<Tensor>& in) { return softmax(in[0], 0); }},
      {"log_softmax_dimm1",
       {"x"},
       [](const std::vector<Tensor>& in) { return log_softmax(in[0], -1); }},
      {"log_softmax_dim1",
       {"x"},
       [](const std::vector<Tensor>& in) { return log_softmax(in[0], 1); }},
      {"layer_norm_1d",
       {"x", "w", "b"},
       [](const std::vector<Tensor>& in) { return layer_norm(in[0], {6}, in[1], in[2], 1e-5); }},
      {"layer_norm_2d",
       {"x", "w", "b"},
       [](const std::vector<Tensor>& in) {
         return layer_norm(in[0], {3, 4}, in[1], in[2], 1e-5);
       }},
      {"gelu_none", {"x"}, [](const std::vector<Tensor>& in) { return gelu(in[0], "none"); }},
      {"gelu_tanh", {"x"}, [](const std::vector<Tensor>& in) { return gelu(in[0], "tanh"); }},
      {"ce_mean", {"x", "t"}, ce_fn(ce_opts(Reduction::Mean))},
      {"ce_sum", {"x", "t"}, ce_fn(ce_opts(Reduction::Sum))},
      {"ce_none", {"x", "t"}, ce_fn(ce_opts(Reduction::None))},
      {"ce_ignore", {"x", "t"}, ce_fn(ce_opts(Reduction::Mean, -100))},
      {"ce_smooth", {"x", "t"}, ce_fn(ce_opts(Reduction::Mean, -100, 0.1))},
      {"ce_smooth_ignore_none", {"x", "t"}, ce_fn(ce_opts(Reduction::None, -100, 0.2))},
      {"ce_smooth_ignore_mean", {"x", "t"}, ce_fn(ce_opts(Reduction::Mean, 2, 0.3))},
      {"ce_ncd", {"x", "t"}, ce_fn(ce_opts(Reduction::Mean, -100, 0.05))},
      {"ce_ncd_none", {"x", "t"}, ce_fn(ce_opts(Reduction::None))},
      // (2,1,3,4)·(5,4,6) -> (2,5,3,6): batch dims broadcast; 1-D·3-D: (4)·(2,4,3) -> (2,3).
      {"matmul_4d3d",
       {"a", "b"},
       [](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); }},
      {"matmul_1d3d",
       {"a", "b"},
       [](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); }},
  };
}
}  // namespace

TEST_CASE("float64 outputs and gradients match PyTorch to rtol 1e-10", "[parity]") {
  for (const ParityCase& c : cases()) {
    SECTION(c.name) { check_parity(c.name, c.args, c.fn, kFloat64, 1e-12, 1e-10); }
  }
}

TEST_CASE("float32 outputs and gradients match PyTorch to 1e-5", "[parity]") {
  for (const ParityCase& c : cases()) {
    SECTION(c.name) { check_parity(c.name, c.args, c.fn, kFloat32, 1e-5, 1e-5); }
  }
}

TEST_CASE("the matmul fixtures have the documented shapes", "[parity]") {
  REQUIRE(fixture("matmul_4d3d_a").shape() == Shape{2, 1, 3, 4});
  REQUIRE(fixture("matmul_4d3d_b").shape() == Shape{5, 4, 6});
  REQUIRE(fixture("matmul_4d3d_out").shape() == Shape{2, 5, 3, 6});
  REQUIRE(fixture("matmul_1d3d_a").shape() == Shape{4});
  REQUIRE(fixture("matmul_1d3d_out").shape() == Shape{2, 3});
  REQUIRE(fixture("matmul_1d3d_db").shape() == Shape{2, 4, 3});
}
