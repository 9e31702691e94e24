// nn/activation.cpp — the activation modules of nn/activation.hpp: each forward is its op.
#include "nn/activation.hpp"

#include "ops/ops.hpp"

#include <fmt/format.h>

namespace tg::nn {
namespace {
// A float as Python's repr writes it (1.0, not 1), so extra_repr reads as PyTorch's.
std::string py_float(double v) {
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}
}  // namespace

Tensor SiLU::forward(const Tensor& x) { return hooked({x}, silu(x)); }
Tensor Sigmoid::forward(const Tensor& x) { return hooked({x}, sigmoid(x)); }

Softplus::Softplus(double b, double t) : TensorModule("Softplus"), beta(b), threshold(t) {}
Tensor Softplus::forward(const Tensor& x) { return hooked({x}, softplus(x, beta, threshold)); }
std::string Softplus::extra_repr() const {
  // PyTorch's defaults are Python ints (beta=1, threshold=20): printed without ".0"
  return fmt::format("beta={}, threshold={}", beta, threshold);
}

LeakyReLU::LeakyReLU(double s) : TensorModule("LeakyReLU"), negative_slope(s) {}
Tensor LeakyReLU::forward(const Tensor& x) { return hooked({x}, leaky_relu(x, negative_slope)); }
std::string LeakyReLU::extra_repr() const {
  return fmt::format("negative_slope={}", py_float(negative_slope));
}

ELU::ELU(double a) : TensorModule("ELU"), alpha(a) {}
Tensor ELU::forward(const Tensor& x) { return hooked({x}, elu(x, alpha)); }
std::string ELU::extra_repr() const { return fmt::format("alpha={}", py_float(alpha)); }

Tensor SELU::forward(const Tensor& x) { return hooked({x}, selu(x)); }

CELU::CELU(double a) : TensorModule("CELU"), alpha(a) {
  if (alpha == 0) throw Error("CELU: alpha cannot be 0");
}
Tensor CELU::forward(const Tensor& x) { return hooked({x}, celu(x, alpha)); }
std::string CELU::extra_repr() const { return fmt::format("alpha={}", py_float(alpha)); }

Tensor Mish::forward(const Tensor& x) { return hooked({x}, mish(x)); }
Tensor Hardswish::forward(const Tensor& x) { return hooked({x}, hardswish(x)); }
Tensor Hardsigmoid::forward(const Tensor& x) { return hooked({x}, hardsigmoid(x)); }

Hardtanh::Hardtanh(double lo, double hi) : TensorModule("Hardtanh"), min_val(lo), max_val(hi) {
  if (min_val > max_val)
    throw Error(fmt::format("Hardtanh: min_val {} must not exceed max_val {}", min_val, max_val));
}
Tensor Hardtanh::forward(const Tensor& x) { return hooked({x}, hardtanh(x, min_val, max_val)); }
std::string Hardtanh::extra_repr() const {
  return fmt::format("min_val={}, max_val={}", py_float(min_val), py_float(max_val));
}

Tensor ReLU6::forward(const Tensor& x) { return hooked({x}, relu6(x)); }
Tensor LogSigmoid::forward(const Tensor& x) { return hooked({x}, logsigmoid(x)); }
Tensor Softsign::forward(const Tensor& x) { return hooked({x}, softsign(x)); }

}  // namespace tg::nn
