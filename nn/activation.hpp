// nn/activation.hpp — the activation modules past ReLU, GELU and Tanh (nn/layers.hpp), with
// PyTorch's names, constructor defaults and extra_repr: SiLU, Sigmoid, Softplus, LeakyReLU, ELU,
// SELU, CELU, Mish, Hardswish, Hardsigmoid, Hardtanh, ReLU6, LogSigmoid, Softsign. Each forward is
// its op (ops/ops.hpp, ops/unary/unary.cpp) and ends with Module::hooked(); none has parameters.
#pragma once

#include "nn/module.hpp"

#include <string>

namespace tg::nn {

class SiLU : public TensorModule {
 public:
  SiLU() : TensorModule("SiLU") {}
  Tensor forward(const Tensor& x) override;
};
class Sigmoid : public TensorModule {
 public:
  Sigmoid() : TensorModule("Sigmoid") {}
  Tensor forward(const Tensor& x) override;
};
class Softplus : public TensorModule {
 public:
  explicit Softplus(double beta = 1.0, double threshold = 20.0);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  double beta, threshold;
};
class LeakyReLU : public TensorModule {
 public:
  explicit LeakyReLU(double negative_slope = 0.01);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  double negative_slope;
};
class ELU : public TensorModule {
 public:
  explicit ELU(double alpha = 1.0);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  double alpha;
};
class SELU : public TensorModule {
 public:
  SELU() : TensorModule("SELU") {}
  Tensor forward(const Tensor& x) override;
};
class CELU : public TensorModule {
 public:
  explicit CELU(double alpha = 1.0);  // alpha != 0
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  double alpha;
};
class Mish : public TensorModule {
 public:
  Mish() : TensorModule("Mish") {}
  Tensor forward(const Tensor& x) override;
};
class Hardswish : public TensorModule {
 public:
  Hardswish() : TensorModule("Hardswish") {}
  Tensor forward(const Tensor& x) override;
};
class Hardsigmoid : public TensorModule {
 public:
  Hardsigmoid() : TensorModule("Hardsigmoid") {}
  Tensor forward(const Tensor& x) override;
};
class Hardtanh : public TensorModule {
 public:
  explicit Hardtanh(double min_val = -1.0, double max_val = 1.0);  // min_val <= max_val
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  double min_val, max_val;
};
class ReLU6 : public TensorModule {
 public:
  ReLU6() : TensorModule("ReLU6") {}
  Tensor forward(const Tensor& x) override;
};
class LogSigmoid : public TensorModule {
 public:
  LogSigmoid() : TensorModule("LogSigmoid") {}
  Tensor forward(const Tensor& x) override;
};
class Softsign : public TensorModule {
 public:
  Softsign() : TensorModule("Softsign") {}
  Tensor forward(const Tensor& x) override;
};

}  // namespace tg::nn
