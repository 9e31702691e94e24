// nn/layers.hpp — PyTorch's basic layers with its parameter names, shapes, initialisation and
// input layouts: Linear, Embedding, LayerNorm, RMSNorm, Dropout, activations (ReLU, GELU, Tanh),
// positional encodings (sinusoidal buffer, rotary, learned table) and the containers Sequential and
// ModuleList. Every forward validates its input and throws naming the module and the shapes,
// e.g. `Linear(4, 3): input (2,5) must have last dim 4`, and ends with Module::hooked().
// Parameters start as float32 (PyTorch's default); module->to(kFloat64) converts them.
// Deliberately not here: attention and transformer blocks (they build on these).
#pragma once

#include "nn/module.hpp"

#include <optional>
#include <string>
#include <vector>

namespace tg::nn {

// y = x·Wᵀ + b. x (..., in) -> (..., out). weight (out, in) ~ kaiming_uniform(a = √5), i.e.
// U(±1/√in); bias (out) ~ U(±1/√in).
class Linear : public TensorModule {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  int64_t in_features, out_features;
  Tensor weight, bias;  // bias undefined when bias = false
};

// Lookup table. indices int64 (...) -> (..., C). weight (V, C) ~ N(0, 1), the padding_idx row
// zeroed (negative padding_idx counts from V); that row gets no gradient.
class Embedding : public TensorModule {
 public:
  Embedding(int64_t num_embeddings, int64_t embedding_dim,
            std::optional<int64_t> padding_idx = std::nullopt);
  Tensor forward(const Tensor& indices) override;
  std::string extra_repr() const override;
  int64_t num_embeddings, embedding_dim;
  std::optional<int64_t> padding_idx;  // normalised to [0, V)
  Tensor weight;
};

// Normalises over the trailing normalized_shape dims. weight = 1, bias = 0 (both of
// normalized_shape) when elementwise_affine.
// bias false: a weight alone (PyTorch's LayerNorm(..., bias=False), as in nanoGPT).
class LayerNorm : public TensorModule {
 public:
  explicit LayerNorm(Shape normalized_shape, double eps = 1e-5, bool elementwise_affine = true,
                     bool bias = true);
  explicit LayerNorm(int64_t normalized_size, double eps = 1e-5, bool elementwise_affine = true,
                     bool bias = true)
      : LayerNorm(Shape{normalized_size}, eps, elementwise_affine, bias) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  Shape normalized_shape;
  double eps;
  bool elementwise_affine;
  Tensor weight, bias;
};

// torch.nn.RMSNorm: x / sqrt(mean(x²) + eps) · weight over the trailing dims; eps unset: the
// input dtype's epsilon; weight starts at ones.
class RMSNorm : public TensorModule {
 public:
  explicit RMSNorm(Shape normalized_shape, std::optional<double> eps = std::nullopt,
                   bool elementwise_affine = true);
  explicit RMSNorm(int64_t normalized_size, std::optional<double> eps = std::nullopt,
                   bool elementwise_affine = true)
      : RMSNorm(Shape{normalized_size}, eps, elementwise_affine) {}
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  Shape normalized_shape;
  std::optional<double> eps;
  bool elementwise_affine;
  Tensor weight;
};

// Zeroes elements with probability p and scales the rest by 1/(1-p) in training mode; the
// identity in eval mode.
class Dropout : public TensorModule {
 public:
  explicit Dropout(double p = 0.5);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  double p;
};

class ReLU : public TensorModule {
 public:
  ReLU() : TensorModule("ReLU") {}
  Tensor forward(const Tensor& x) override;
};
class GELU : public TensorModule {
 public:
  explicit GELU(std::string approximate = "none");  // "none" (erf) or "tanh"
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  std::string approximate;
};
class Tanh : public TensorModule {
 public:
  Tanh() : TensorModule("Tanh") {}
  Tensor forward(const Tensor& x) override;
};

// "Attention is all you need" sinusoids: buffer pe (max_len, C) with
//   pe[t, 2i] = sin(t / 10000^(2i/C)),  pe[t, 2i+1] = cos(t / 10000^(2i/C)).
// x (..., T, C) -> x + pe[:T]. No parameters; pe is a persistent buffer (like the PyTorch
// tutorial's register_buffer('pe', pe)).
class PositionalEncoding : public TensorModule {
 public:
  PositionalEncoding(int64_t embedding_dim, int64_t max_len = 5000);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  int64_t embedding_dim, max_len;
  Tensor pe;
};

// Rotary position embeddings (RoFormer) over the first `dim` features: buffers cos, sin
// (max_seq_len, dim/2) of the angles t·base^(−2i/dim), computed in double, not saved in state
// dicts (PyTorch's persistent=False); float64 inputs read float64 tables (never a float32 copy).
// forward(x, offset, seq_dim) is apply_rotary(x, cos, sin) with the tables' rows offset .. offset +
// T (decoding after offset cached positions), x (..., T at seq_dim, ..., D ≥ dim); half-split pairs
// by default (GPT-NeoX, Hugging Face), interleaved (GPT-J, Meta's LLaMA) on request. No parameters.
// Each table holds at most kMaxTableEntries = max_seq_len · dim/2 angles (2^27: a million
// positions at dim 256); larger ones are refused before anything is allocated.
class RotaryEmbedding : public TensorModule {
 public:
  static constexpr int64_t kMaxTableEntries = int64_t{1} << 27;
  explicit RotaryEmbedding(int64_t dim, int64_t max_seq_len = 4096, double base = 10000.0,
                           bool interleaved = false);
  Tensor forward(const Tensor& x) override { return forward(x, 0); }
  Tensor forward(const Tensor& x, int64_t offset, int64_t seq_dim = -2);
  std::string extra_repr() const override;
  int64_t dim, max_seq_len;
  double base;
  bool interleaved;
  Tensor cos, sin;  // the module's dtype and device (float32 until .to())

 private:
  Tensor cos64_, sin64_;  // the tables in float64 on the CPU: float64 inputs read these
};

// Learned positions (GPT-2's wpe): weight (max_len, C) ~ N(0, 1). x (..., T, C) -> x + weight[:T].
class LearnedPositionalEmbedding : public TensorModule {
 public:
  LearnedPositionalEmbedding(int64_t max_len, int64_t embedding_dim);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  int64_t max_len, embedding_dim;
  Tensor weight;
};

// The SwiGLU feed-forward of LLaMA-style models (Shazeer 2020): down_proj(silu(gate_proj(x)) ·
// up_proj(x)), three Linear layers with Hugging Face's names, no biases unless asked for.
// x (..., dim) -> (..., dim).
class SwiGLU : public TensorModule {
 public:
  SwiGLU(int64_t dim, int64_t hidden_dim, bool bias = false);
  Tensor forward(const Tensor& x) override;
  std::string extra_repr() const override;
  int64_t dim, hidden_dim;
  std::shared_ptr<Linear> gate_proj, up_proj, down_proj;
};

// Chains TensorModules; children are named "0", "1", ... like PyTorch.
class Sequential : public TensorModule {
 public:
  Sequential() : TensorModule("Sequential") {}
  Sequential(std::initializer_list<std::shared_ptr<TensorModule>> modules);
  Sequential& push_back(std::shared_ptr<TensorModule> m);
  Tensor forward(const Tensor& x) override;
  size_t size() const { return mods_.size(); }
  const std::shared_ptr<TensorModule>& operator[](size_t i) const;

 private:
  std::vector<std::shared_ptr<TensorModule>> mods_;
};

// torch.nn.ModuleDict: submodules by name, in insertion order (state_dict keys "name.…");
// assigning an existing name replaces the module in its place, as PyTorch's update does. No
// forward of its own.
class ModuleDict : public Module {
 public:
  ModuleDict() : Module("ModuleDict") {}
  ModuleDict(std::initializer_list<std::pair<std::string, ModulePtr>> modules);
  ModuleDict& insert(const std::string& name, ModulePtr m);  // adds or replaces
  ModulePtr pop(const std::string& name);                    // removes and returns it
  bool contains(const std::string& name) const;
  size_t size() const { return names_.size(); }
  const std::vector<std::string>& keys() const { return names_; }
  const ModulePtr& operator[](const std::string& name) const;  // throws naming the keys
  template <typename M>
  std::shared_ptr<M> at(const std::string& name) const {  // typed access
    auto m = std::dynamic_pointer_cast<M>((*this)[name]);
    if (!m) throw_wrong_type(name);
    return m;
  }
  std::vector<std::pair<std::string, ModulePtr>> items() const { return named_children(); }

 private:
  std::vector<std::string> names_;
  [[noreturn]] void throw_wrong_type(const std::string& name) const;
};

// A list of submodules (any kind) named "0", "1", ...; it has no forward of its own.
class ModuleList : public Module {
 public:
  ModuleList() : Module("ModuleList") {}
  ModuleList(std::initializer_list<ModulePtr> modules);
  ModuleList& push_back(ModulePtr m);
  size_t size() const { return mods_.size(); }
  const ModulePtr& operator[](size_t i) const;
  template <typename M>
  std::shared_ptr<M> at(
      size_t i) const {  // typed access; throws when i is out of range or not an M
    auto m = std::dynamic_pointer_cast<M>((*this)[i]);
    if (!m) throw_wrong_type(i);
    return m;
  }
  std::vector<ModulePtr>::const_iterator begin() const { return mods_.begin(); }
  std::vector<ModulePtr>::const_iterator end() const { return mods_.end(); }

 private:
  std::vector<ModulePtr> mods_;
  [[noreturn]] void throw_wrong_type(size_t i) const;
};

}  // namespace tg::nn
