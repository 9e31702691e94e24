// nn/layers.cpp — the layers of layers.hpp: construction with PyTorch's initialisation, input
// checks naming the module and shapes, forward through the ops.
#include "nn/layers.hpp"

#include "autograd/tape.hpp"
#include "nn/init.hpp"
#include "ops/autocast/autocast.hpp"
#include "ops/ops.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace tg::nn {
namespace {
const char* py_bool(bool b) { return b ? "True" : "False"; }

void require_positive(const char* what, int64_t v, const std::string& label) {
  if (v <= 0) throw Error(fmt::format("{}: {} must be positive, got {}", label, what, v));
}
// x (..., T, C): checks dims >= 2, C and T <= max_len.
void check_positional(const std::string& label, const Tensor& x, int64_t C, int64_t max_len) {
  if (!x.defined() || x.dim() < 2 || x.size(-1) != C)
    throw Error(fmt::format("{}: input {} must be (..., T, C) with C = {}", label,
                            x.defined() ? shape_str(x.shape()) : "undefined", C));
  if (x.size(-2) > max_len)
    throw Error(fmt::format("{}: input {} has T = {} > max_len {}", label, shape_str(x.shape()),
                            x.size(-2), max_len));
}
}  // namespace

// ---- Linear
// ---------------------------------------------------------------------------------------

Linear::Linear(int64_t in, int64_t out, bool has_bias)
    : TensorModule("Linear"), in_features(in), out_features(out) {
  std::string label = fmt::format("Linear({}, {})", in, out);
  require_positive("in_features", in, label);
  require_positive("out_features", out, label);
  weight = zeros({out, in});
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  register_parameter("weight", &weight);
  if (has_bias) {
    bias = zeros({out});
    double bound = 1.0 / std::sqrt(static_cast<double>(in));
    init::uniform_(bias, -bound, bound);
    register_parameter("bias", &bias);
  }
}
Tensor Linear::forward(const Tensor& x) {
  if (!x.defined() || x.dim() < 1 || x.size(-1) != in_features)
    throw Error(fmt::format("Linear({}, {}): input {} must have last dim {}", in_features,
                            out_features, x.defined() ? shape_str(x.shape()) : "undefined",
                            in_features));
  // Under autocast the linear op casts both to the region's dtype (PyTorch's nn.Linear takes a
  // bfloat16 input with float32 weights there too). A float32 input with bfloat16 / float16
  // weights is weight-only reduced precision: the op computes it in float32.
  const bool weight_only = x.dtype() == kFloat32 && is_reduced(weight.dtype());
  if (x.dtype() != weight.dtype() && !weight_only &&
      !(is_autocast_enabled() && is_floating(x.dtype()) && is_floating(weight.dtype())))
    throw Error(fmt::format("Linear({}, {}): input {} is {} but weight is {}", in_features,
                            out_features, shape_str(x.shape()), dtype_name(x.dtype()),
                            dtype_name(weight.dtype())));
  return hooked({x}, linear(x, weight, bias));
}
std::string Linear::extra_repr() const {
  return fmt::format("in_features={}, out_features={}, bias={}", in_features, out_features,
                     py_bool(bias.defined()));
}

// ---- Embedding
// ------------------------------------------------------------------------------------

Embedding::Embedding(int64_t V, int64_t C, std::optional<int64_t> pad)
    : TensorModule("Embedding"), num_embeddings(V), embedding_dim(C) {
  std::string label = fmt::format("Embedding({}, {})", V, C);
  require_positive("num_embeddings", V, label);
  require_positive("embedding_dim", C, label);
  if (pad) {
    if (*pad >= V || *pad < -V)
      throw Error(
          fmt::format("{}: padding_idx {} must be within num_embeddings {}", label, *pad, V));
    padding_idx = *pad < 0 ? *pad + V : *pad;
  }
  weight = zeros({V, C});
  init::normal_(weight);
  if (padding_idx) {
    float* row = weight.data<float>() + *padding_idx * C;
    std::fill(row, row + C, 0.0f);
  }
  register_parameter("weight", &weight);
}
Tensor Embedding::forward(const Tensor& indices) {
  if (!indices.defined() || indices.dtype() != kInt64)
    throw Error(fmt::format("Embedding({}, {}): indices {} must be int64, got {}", num_embeddings,
                            embedding_dim,
                            indices.defined() ? shape_str(indices.shape()) : "undefined",
                            indices.defined() ? dtype_name(indices.dtype()) : "undefined"));
  return hooked({indices}, embedding(indices, weight, padding_idx));
}
std::string Embedding::extra_repr() const {
  std::string s = fmt::format("{}, {}", num_embeddings, embedding_dim);
  if (padding_idx) s += fmt::format(", padding_idx={}", *padding_idx);
  return s;
}

// ---- LayerNorm
// ------------------------------------------------------------------------------------

namespace {
// The normalising modules' checks: a non-empty shape of positive sizes; an input ending with it.
void check_norm_shape(const char* module, const Shape& ns) {
  if (ns.empty() || shape_numel(ns) <= 0)
    throw Error(fmt::format("{}({}): normalized_shape must be non-empty with positive sizes",
                            module, shape_str(ns)));
}
void check_norm_input(const char* module, const Shape& ns, const Tensor& x) {
  const size_t k = ns.size();
  const bool ok = x.defined() && x.shape().size() >= k &&
                  Shape(x.shape().end() - static_cast<std::ptrdiff_t>(k), x.shape().end()) == ns;
  if (!ok)
    throw Error(fmt::format("{}({}): input {} must end with {}", module, shape_str(ns),
                            x.defined() ? shape_str(x.shape()) : "undefined", shape_str(ns)));
}
}  // namespace

LayerNorm::LayerNorm(Shape shape, double eps_, bool affine, bool with_bias)
    : TensorModule("LayerNorm"),
      normalized_shape(std::move(shape)),
      eps(eps_),
      elementwise_affine(affine) {
  check_norm_shape("LayerNorm", normalized_shape);
  if (affine) {
    weight = ones(normalized_shape);
    register_parameter("weight", &weight);
    if (with_bias) {
      bias = zeros(normalized_shape);
      register_parameter("bias", &bias);
    }
  }
}
Tensor LayerNorm::forward(const Tensor& x) {
  check_norm_input("LayerNorm", normalized_shape, x);
  return hooked({x}, layer_norm(x, normalized_shape, weight, bias, eps));
}
std::string LayerNorm::extra_repr() const {
  return fmt::format("{}, eps={}, elementwise_affine={}", shape_str(normalized_shape), eps,
                     py_bool(elementwise_affine));
}

RMSNorm::RMSNorm(Shape shape, std::optional<double> eps_, bool affine)
    : TensorModule("RMSNorm"),
      normalized_shape(std::move(shape)),
      eps(eps_),
      elementwise_affine(affine) {
  check_norm_shape("RMSNorm", normalized_shape);
  if (eps && !(*eps >= 0))
    throw Error(
        fmt::format("RMSNorm({}): eps must be >= 0, got {}", shape_str(normalized_shape), *eps));
  if (affine) {
    weight = ones(normalized_shape);
    register_parameter("weight", &weight);
  }
}
Tensor RMSNorm::forward(const Tensor& x) {
  check_norm_input("RMSNorm", normalized_shape, x);
  return hooked({x}, rms_norm(x, normalized_shape, weight, eps));
}
std::string RMSNorm::extra_repr() const {
  return fmt::format("{}, eps={}, elementwise_affine={}", shape_str(normalized_shape),
                     eps ? fmt::format("{}", *eps) : std::string("None"),
                     py_bool(elementwise_affine));
}

// ---- Dropout and activations
// ----------------------------------------------------------------------

Dropout::Dropout(double p_) : TensorModule("Dropout"), p(p_) {
  if (!(p >= 0 && p <= 1))
    throw Error(fmt::format("Dropout: probability has to be between 0 and 1, but got {}", p));
}
Tensor Dropout::forward(const Tensor& x) { return hooked({x}, dropout(x, p, is_training())); }
std::string Dropout::extra_repr() const { return fmt::format("p={}", p); }

Tensor ReLU::forward(const Tensor& x) { return hooked({x}, relu(x)); }
GELU::GELU(std::string approx) : TensorModule("GELU"), approximate(std::move(approx)) {
  if (approximate != "none" && approximate != "tanh")
    throw Error(
        fmt::format("GELU: approximate must be \"none\" or \"tanh\", got \"{}\"", approximate));
}
Tensor GELU::forward(const Tensor& x) { return hooked({x}, gelu(x, approximate)); }
std::string GELU::extra_repr() const { return fmt::format("approximate='{}'", approximate); }
Tensor Tanh::forward(const Tensor& x) { return hooked({x}, tanh(x)); }

// ---- positional encodings
// -------------------------------------------------------------------------

PositionalEncoding::PositionalEncoding(int64_t C, int64_t L)
    : TensorModule("PositionalEncoding"), embedding_dim(C), max_len(L) {
  std::string label = fmt::format("PositionalEncoding({}, {})", C, L);
  require_positive("embedding_dim", C, label);
  require_positive("max_len", L, label);
  pe = zeros({L, C});
  float* p = pe.data<float>();
  for (int64_t t = 0; t < L; ++t)
    for (int64_t i = 0; i < C; i += 2) {
      double freq =
          std::exp(static_cast<double>(i) * (-std::log(10000.0) / static_cast<double>(C)));
      p[t * C + i] = static_cast<float>(std::sin(static_cast<double>(t) * freq));
      if (i + 1 < C) p[t * C + i + 1] = static_cast<float>(std::cos(static_cast<double>(t) * freq));
    }
  register_buffer("pe", pe);
}
Tensor PositionalEncoding::forward(const Tensor& x) {
  check_positional(fmt::format("PositionalEncoding({}, {})", embedding_dim, max_len), x,
                   embedding_dim, max_len);
  return hooked({x}, x + narrow(pe, 0, 0, x.size(-2)));
}
std::string PositionalEncoding::extra_repr() const {
  return fmt::format("{}, max_len={}", embedding_dim, max_len);
}

SwiGLU::SwiGLU(int64_t d, int64_t hidden, bool bias)
    : TensorModule("SwiGLU"), dim(d), hidden_dim(hidden) {
  const std::string label = fmt::format("SwiGLU({}, {})", d, hidden);
  require_positive("dim", d, label);
  require_positive("hidden_dim", hidden, label);
  gate_proj = register_module("gate_proj", std::make_shared<Linear>(d, hidden, bias));
  up_proj = register_module("up_proj", std::make_shared<Linear>(d, hidden, bias));
  down_proj = register_module("down_proj", std::make_shared<Linear>(hidden, d, bias));
}
Tensor SwiGLU::forward(const Tensor& x) {
  if (!x.defined() || x.dim() < 1 || x.size(-1) != dim)
    throw Error(fmt::format("SwiGLU({}, {}): input {} must have last dim {}", dim, hidden_dim,
                            x.defined() ? shape_str(x.shape()) : "undefined", dim));
  return hooked({x}, down_proj->forward(silu(gate_proj->forward(x)) * up_proj->forward(x)));
}
std::string SwiGLU::extra_repr() const {
  return fmt::format("dim={}, hidden_dim={}", dim, hidden_dim);
}

RotaryEmbedding::RotaryEmbedding(int64_t d, int64_t L, double b, bool inter)
    : TensorModule("RotaryEmbedding"), dim(d), max_seq_len(L), base(b), interleaved(inter) {
  const std::string label = fmt::format("RotaryEmbedding({}, max_seq_len={})", d, L);
  require_positive("dim", d, label);
  require_positive("max_seq_len", L, label);
  if (d % 2 != 0) throw Error(fmt::format("{}: dim must be even, got {}", label, d));
  if (!(b > 0)) throw Error(fmt::format("{}: base must be > 0, got {}", label, b));
  const int64_t h = d / 2;
  if (L > kMaxTableEntries / h)  // checked before the tables are allocated
    throw Error(
        fmt::format("{}: max_seq_len {} · dim/2 {} angles exceed the table limit 2^27 = {} "
                    "(RotaryEmbedding::kMaxTableEntries): max_seq_len must be <= {} at dim {}",
                    label, L, h, kMaxTableEntries, kMaxTableEntries / h, d));
  std::vector<double> c(static_cast<size_t>(L * h)), s(c.size());
  for (int64_t i = 0; i < h; ++i) {
    const double theta = std::pow(b, -2.0 * static_cast<double>(i) / static_cast<double>(d));
    for (int64_t t = 0; t < L; ++t) {
      c[static_cast<size_t>(t * h + i)] = std::cos(static_cast<double>(t) * theta);
      s[static_cast<size_t>(t * h + i)] = std::sin(static_cast<double>(t) * theta);
    }
  }
  cos64_ = tensor(c, {L, h});
  sin64_ = tensor(s, {L, h});
  cos = register_buffer("cos", cos64_.to(kFloat32), false);
  sin = register_buffer("sin", sin64_.to(kFloat32), false);
}
Tensor RotaryEmbedding::forward(const Tensor& x, int64_t offset, int64_t seq_dim) {
  const int64_t nd = x.defined() ? x.dim() : 0;
  const int64_t sd = seq_dim < 0 ? seq_dim + nd : seq_dim;
  if (!x.defined() || nd < 2 || sd < 0 || sd > nd - 2 || x.size(-1) < dim)
    throw Error(
        fmt::format("RotaryEmbedding({}): input {} must be (..., T at seq_dim {}, ..., D) "
                    "with D >= {}",
                    dim, x.defined() ? shape_str(x.shape()) : "undefined", seq_dim, dim));
  const int64_t T = x.size(sd);
  if (offset < 0 || offset + T > max_seq_len)
    throw Error(
        fmt::format("RotaryEmbedding({}): positions {} .. {} out of range [0, {}) (offset "
                    "{}, input {})",
                    dim, offset, offset + T - 1, max_seq_len, offset, shape_str(x.shape())));
  const bool f64 = x.dtype() == kFloat64;
  Tensor c = narrow(f64 ? cos64_ : cos, 0, offset, T), s = narrow(f64 ? sin64_ : sin, 0, offset, T);
  if (c.dtype() != x.dtype() || c.device() != x.device()) {
    c = c.to(x.device()).to(x.dtype());
    s = s.to(x.device()).to(x.dtype());
  }
  return hooked({x}, apply_rotary(x, c, s, interleaved, sd));
}
std::string RotaryEmbedding::extra_repr() const {
  return fmt::format("dim={}, max_seq_len={}, base={}, interleaved={}", dim, max_seq_len, base,
                     py_bool(interleaved));
}

LearnedPositionalEmbedding::LearnedPositionalEmbedding(int64_t L, int64_t C)
    : TensorModule("LearnedPositionalEmbedding"), max_len(L), embedding_dim(C) {
  std::string label = fmt::format("LearnedPositionalEmbedding({}, {})", L, C);
  require_positive("max_len", L, label);
  require_positive("embedding_dim", C, label);
  weight = zeros({L, C});
  init::normal_(weight);
  register_parameter("weight", &weight);
}
Tensor LearnedPositionalEmbedding::forward(const Tensor& x) {
  check_positional(fmt::format("LearnedPositionalEmbedding({}, {})", max_len, embedding_dim), x,
                   embedding_dim, max_len);
  return hooked({x}, x + narrow(weight, 0, 0, x.size(-2)));
}
std::string LearnedPositionalEmbedding::extra_repr() const {
  return fmt::format("{}, {}", max_len, embedding_dim);
}

// ---- containers
// -----------------------------------------------------------------------------------

Sequential::Sequential(std::initializer_list<std::shared_ptr<TensorModule>> modules)
    : TensorModule("Sequential") {
  for (const auto& m : modules) push_back(m);
}
Sequential& Sequential::push_back(std::shared_ptr<TensorModule> m) {
  register_module(std::to_string(mods_.size()), m);
  mods_.push_back(std::move(m));
  return *this;
}
Tensor Sequential::forward(const Tensor& x) {
  Tensor h = x;
  for (auto& m : mods_) h = m->forward(h);
  return hooked({x}, h);
}
const std::shared_ptr<TensorModule>& Sequential::operator[](size_t i) const {
  if (i >= mods_.size())
    throw Error(fmt::format("Sequential: index {} out of range for size {}", i, mods_.size()));
  return mods_[i];
}

ModuleList::ModuleList(std::initializer_list<ModulePtr> modules) : Module("ModuleList") {
  for (const auto& m : modules) push_back(m);
}
ModuleList& ModuleList::push_back(ModulePtr m) {
  register_module(std::to_string(mods_.size()), m);
  mods_.push_back(std::move(m));
  return *this;
}
const ModulePtr& ModuleList::operator[](size_t i) const {
  if (i >= mods_.size())
    throw Error(fmt::format("ModuleList: index {} out of range for size {}", i, mods_.size()));
  return mods_[i];
}
void ModuleList::throw_wrong_type(size_t i) const {
  throw Error(fmt::format("ModuleList: element {} is a {}, not the requested type", i,
                          mods_[i]->type_name()));
}

ModuleDict::ModuleDict(std::initializer_list<std::pair<std::string, ModulePtr>> modules)
    : Module("ModuleDict") {
  for (const auto& [n, m] : modules) insert(n, m);
}
ModuleDict& ModuleDict::insert(const std::string& name, ModulePtr m) {
  if (contains(name)) {
    replace_child(name, std::move(m));
    return *this;
  }
  register_module(name, std::move(m));
  names_.push_back(name);
  return *this;
}
bool ModuleDict::contains(const std::string& name) const {
  return std::find(names_.begin(), names_.end(), name) != names_.end();
}
const ModulePtr& ModuleDict::operator[](const std::string& name) const {
  static const ModulePtr none;
  for (const auto& [n, m] : children_ref())
    if (n == name) return m;
  throw Error(fmt::format("ModuleDict: no key \"{}\" (keys: {})", name,
                          names_.empty() ? "none" : fmt::format("{}", fmt::join(names_, ", "))));
  return none;
}
ModulePtr ModuleDict::pop(const std::string& name) {
  ModulePtr m = (*this)[name];
  remove_child(name);
  names_.erase(std::find(names_.begin(), names_.end(), name));
  return m;
}
void ModuleDict::throw_wrong_type(const std::string& name) const {
  throw Error(fmt::format("ModuleDict: \"{}\" is a {}, not the requested type", name,
                          (*this)[name]->type_name()));
}

}  // namespace tg::nn
