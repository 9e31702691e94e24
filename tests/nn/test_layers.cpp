// tests/nn/test_layers.cpp — the layers: PyTorch parameter names, shapes and init ranges,
// float64 gradchecks through the modules, input errors, positional encodings, activations and
// seeded reproducibility of initialisation and training.
#include "helpers.hpp"

#include "nn/layers.hpp"
#include "nn/optim.hpp"

#include <cmath>
#include <memory>

using namespace tg;

namespace {
double max_abs(const Tensor& t) {
  double m = 0;
  for (double v : t.to_vector<double>()) m = std::max(m, std::fabs(v));
  return m;
}
}  // namespace

TEST_CASE("Linear: shapes, init bounds, gradcheck, errors", "[layers]") {
  manual_seed(4);
  auto lin = std::make_shared<nn::Linear>(50, 30);
  REQUIRE(lin->weight.shape() == Shape{30, 50});
  REQUIRE(lin->bias.shape() == Shape{30});
  double bound = 1.0 / std::sqrt(50.0);
  REQUIRE(max_abs(lin->weight) <= bound);
  REQUIRE(max_abs(lin->weight) > 0.9 * bound);
  REQUIRE(max_abs(lin->bias) <= bound);
  REQUIRE(max_abs(lin->bias) > 0.5 * bound);
  REQUIRE(lin->num_parameters() == 30 * 50 + 30);
  REQUIRE(std::make_shared<nn::Linear>(3, 2, false)->named_parameters().size() == 1);

  auto small = std::make_shared<nn::Linear>(4, 3);
  small->to(kFloat64);
  Tensor x = tgt::leaf({2, 5, 4});
  tgt::check_grad([&](const std::vector<Tensor>& in) { return small->forward(in[0]); },
                  {x, small->weight, small->bias}, "Linear (2,5,4)");
  REQUIRE(small->forward(tgt::leaf({4})).shape() == Shape{3});
  REQUIRE_ERROR(small->forward(zeros({2, 5}, kFloat64)),
                "Linear(4, 3): input (2,5) must have last dim 4");
  REQUIRE_ERROR(nn::Linear(0, 3), "Linear(0, 3): in_features must be positive, got 0");
}

TEST_CASE("Embedding: N(0,1) init, padding row, gradcheck, errors", "[layers]") {
  manual_seed(5);
  auto emb = std::make_shared<nn::Embedding>(10, 4, -1);
  REQUIRE(emb->padding_idx == 9);
  REQUIRE(emb->weight.shape() == Shape{10, 4});
  std::vector<float> w = emb->weight.to_vector<float>();
  for (int c = 0; c < 4; ++c) REQUIRE(w[9 * 4 + c] == 0.0f);
  REQUIRE(max_abs(emb->weight) > 0.5);
  emb->to(kFloat64);
  Tensor idx = tensor(std::vector<int64_t>{1, 9, 3, 1, 0, 9}, {2, 3});
  REQUIRE(emb->forward(idx).shape() == Shape{2, 3, 4});
  // The padding row gets no gradient by design, so the gradcheck uses other rows.
  Tensor idx2 = tensor(std::vector<int64_t>{1, 2, 3, 1, 0, 5}, {3, 2});
  tgt::check_grad([&](const std::vector<Tensor>&) { return emb->forward(idx2); }, {emb->weight},
                  "Embedding");
  emb->forward(idx).sum().backward();
  std::vector<double> g = emb->weight.grad().to_vector<double>();
  REQUIRE(g[9 * 4] == 0.0);
  REQUIRE(g[1 * 4] == 2.0);
  REQUIRE(emb->extra_repr() == "10, 4, padding_idx=9");
  REQUIRE_ERROR(emb->forward(zeros({2})),
                "Embedding(10, 4): indices (2) must be int64, got float32");
  REQUIRE_ERROR(nn::Embedding(10, 4, 10),
                "Embedding(10, 4): padding_idx 10 must be within num_embeddings 10");
}

TEST_CASE("LayerNorm: ones/zeros init, gradcheck, errors", "[layers]") {
  manual_seed(6);
  auto ln = std::make_shared<nn::LayerNorm>(Shape{2, 3});
  REQUIRE(ln->weight.to_vector<float>() == std::vector<float>(6, 1.0f));
  REQUIRE(ln->bias.to_vector<float>() == std::vector<float>(6, 0.0f));
  ln->to(kFloat64);
  for (Tensor t : {ln->weight, ln->bias}) {
    double* p = t.data<double>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] += 0.1 * static_cast<double>(i + 1);
  }
  Tensor x = tgt::leaf({4, 2, 3});
  tgt::check_grad([&](const std::vector<Tensor>& in) { return ln->forward(in[0]); },
                  {x, ln->weight, ln->bias}, "LayerNorm (4,2,3) over (2,3)");
  auto plain = std::make_shared<nn::LayerNorm>(3, 1e-5, false);
  REQUIRE(plain->num_parameters() == 0);
  Tensor y = plain->forward(tensor(std::vector<float>{1, 2, 3}));
  tgt::require_close(y, std::vector<double>{-1.2247, 0, 1.2247}, 1e-4, 0);
  REQUIRE_ERROR(ln->forward(zeros({4, 3, 2}, kFloat64)),
                "LayerNorm((2,3)): input (4,3,2) must end with (2,3)");
}

TEST_CASE("LayerNorm without bias, RMSNorm: parameters, values, gradcheck, repr, errors",
          "[layers]") {
  // LayerNorm(..., bias=False): a weight alone, as layer_norm with no bias
  auto nb = std::make_shared<nn::LayerNorm>(4, 1e-5, true, false);
  REQUIRE(nb->num_parameters() == 4);
  REQUIRE(nb->named_parameters().size() == 1);
  REQUIRE_FALSE(nb->bias.defined());
  Tensor x = randn({3, 4});
  REQUIRE(nb->forward(x).to_vector<float>() ==
          layer_norm(x, {4}, nb->weight, Tensor()).to_vector<float>());
  // RMSNorm: weight ones, eps None by default (the dtype's epsilon), PyTorch's repr
  auto rms = std::make_shared<nn::RMSNorm>(Shape{2, 3});
  REQUIRE(rms->weight.to_vector<float>() == std::vector<float>(6, 1.0f));
  CHECK(rms->repr() == "RMSNorm((2,3), eps=None, elementwise_affine=True)");
  CHECK(nn::RMSNorm(8, 1e-6).repr() == "RMSNorm((8), eps=1e-06, elementwise_affine=True)");
  REQUIRE(nn::RMSNorm(8, std::nullopt, false).num_parameters() == 0);
  rms->to(kFloat64);
  double* p = rms->weight.data<double>();
  for (int64_t i = 0; i < 6; ++i) p[i] += 0.1 * static_cast<double>(i + 1);
  Tensor xr = tgt::leaf({4, 2, 3});
  tgt::check_grad([&](const std::vector<Tensor>& in) { return rms->forward(in[0]); },
                  {xr, rms->weight}, "RMSNorm (4,2,3) over (2,3)");
  REQUIRE_ERROR(rms->forward(zeros({4, 3, 2}, kFloat64)),
                "RMSNorm((2,3)): input (4,3,2) must end with (2,3)");
  REQUIRE_ERROR(nn::RMSNorm(Shape{}), "RMSNorm(()): normalized_shape must be non-empty");
}

TEST_CASE("positional encodings: sinusoid values, learned table gradcheck", "[layers]") {
  auto pe = std::make_shared<nn::PositionalEncoding>(6, 10);
  REQUIRE(pe->pe.shape() == Shape{10, 6});
  Tensor x = zeros({2, 3, 6});
  Tensor y = pe->forward(x);
  REQUIRE(y.shape() == Shape{2, 3, 6});
  std::vector<float> v = y.to_vector<float>();
  // t = 2, i = 2: freq = 10000^(-2/6); pe[2, 2] = sin(2 freq), pe[2, 3] = cos(2 freq).
  double f = std::pow(10000.0, -2.0 / 6.0);
  REQUIRE(v[2 * 6 + 2] == Approx(std::sin(2 * f)));
  REQUIRE(v[2 * 6 + 3] == Approx(std::cos(2 * f)));
  REQUIRE(v[18 + 0 * 6 + 1] == 1.0f);  // second batch, t = 0: cos(0)
  REQUIRE(pe->state_dict().contains("pe"));
  REQUIRE_ERROR(pe->forward(zeros({11, 6})),
                "PositionalEncoding(6, 10): input (11,6) has T = 11 > max_len 10");
  REQUIRE_ERROR(pe->forward(zeros({3, 5})),
                "PositionalEncoding(6, 10): input (3,5) must be (..., T, C) with C = 6");

  manual_seed(7);
  auto wpe = std::make_shared<nn::LearnedPositionalEmbedding>(8, 3);
  wpe->to(kFloat64);
  REQUIRE(wpe->named_parameters()[0].first == "weight");
  Tensor h = tgt::leaf({2, 5, 3});
  tgt::check_grad([&](const std::vector<Tensor>& in) { return wpe->forward(in[0]); },
                  {h, wpe->weight}, "LearnedPositionalEmbedding");
}

TEST_CASE("activations and Sequential", "[layers]") {
  manual_seed(8);
  auto mlp =
      std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::TensorModule>>{
          std::make_shared<nn::Linear>(3, 5), std::make_shared<nn::GELU>("tanh"),
          std::make_shared<nn::Linear>(5, 4), std::make_shared<nn::ReLU>(),
          std::make_shared<nn::Linear>(4, 2), std::make_shared<nn::Tanh>()});
  mlp->to(kFloat64);
  Tensor x = tgt::leaf({3, 3});
  std::vector<Tensor> inputs{x};
  for (Tensor& p : mlp->parameters()) inputs.push_back(p);
  tgt::check_grad([&](const std::vector<Tensor>& in) { return mlp->forward(in[0]); }, inputs,
                  "MLP");
  tgt::require_close(nn::Tanh().forward(x), tanh(x), 0, 0);
  tgt::require_close(nn::GELU().forward(x), gelu(x), 0, 0);
  REQUIRE(mlp->size() == 6);
  REQUIRE_ERROR((*mlp)[6], "Sequential: index 6 out of range for size 6");
  REQUIRE_ERROR(nn::GELU("fast"), "GELU: approximate must be \"none\" or \"tanh\", got \"fast\"");
  REQUIRE_ERROR(nn::Dropout(1.5), "Dropout: probability has to be between 0 and 1, but got 1.5");
}

TEST_CASE("same seed: bit-identical initial parameters and losses over SGD steps",
          "[layers][repro]") {
  auto run = [](uint64_t seed) {
    manual_seed(seed);
    auto net =
        std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::TensorModule>>{
            std::make_shared<nn::Linear>(4, 8), std::make_shared<nn::Tanh>(),
            std::make_shared<nn::Dropout>(0.2), std::make_shared<nn::Linear>(8, 1)});
    std::vector<float> init;
    for (Tensor& p : net->parameters())
      for (float v : p.to_vector<float>()) init.push_back(v);
    Tensor x = randn({16, 4}), y = randn({16, 1});
    nn::SGD opt(net->parameters(), {0.1, 0.9});
    std::vector<float> losses;
    for (int i = 0; i < 4; ++i) {
      Tensor d = net->forward(x) - y;
      Tensor loss = (d * d).mean();
      opt.zero_grad();
      loss.backward();
      opt.step();
      losses.push_back(loss.item<float>());
    }
    return std::make_pair(init, losses);
  };
  auto a = run(42), b = run(42), c = run(43);
  REQUIRE(a.first == b.first);
  REQUIRE(a.second == b.second);
  REQUIRE(a.first != c.first);
  REQUIRE(a.second[3] < a.second[0]);
}

TEST_CASE("SwiGLU: three bias-free projections, values, gradcheck, repr, errors", "[layers]") {
  manual_seed(9);
  nn::SwiGLU ff(6, 10);
  const auto params = ff.named_parameters();
  REQUIRE(params.size() == 3);
  CHECK(params[0].first == "gate_proj.weight");
  CHECK(params[1].first == "up_proj.weight");
  CHECK(params[2].first == "down_proj.weight");
  CHECK(ff.down_proj->weight.shape() == Shape{6, 10});
  CHECK(ff.repr().rfind("SwiGLU(dim=6, hidden_dim=10)", 0) == 0);
  Tensor x = randn({2, 3, 6});
  Tensor want = linear(silu(linear(x, ff.gate_proj->weight)) * linear(x, ff.up_proj->weight),
                       ff.down_proj->weight);
  CHECK(ff.forward(x).to_vector<float>() == want.to_vector<float>());
  ff.to(kFloat64);
  Tensor xl = tgt::leaf({2, 6});
  tgt::check_grad([&](const std::vector<Tensor>& in) { return ff.forward(in[0]); },
                  {xl, ff.gate_proj->weight, ff.up_proj->weight, ff.down_proj->weight},
                  "SwiGLU (2,6) -> 10 -> 6");
  REQUIRE_ERROR(ff.forward(zeros({2, 5}, kFloat64)),
                "SwiGLU(6, 10): input (2,5) must have last dim 6");
  REQUIRE(nn::SwiGLU(4, 8, true).num_parameters() == 3 * 32 + 8 + 8 + 4);
  REQUIRE_ERROR(glu(zeros({2, 5}), -1),
                "glu: halving dimension must be even, but dim -1 of input (2,5) has size 5");
}

TEST_CASE("RotaryEmbedding: tables past the limit are refused before allocating", "[layers]") {
  // issue 40: (2, 2^40) used to fill memory; the limit is max_seq_len · dim/2 <= 2^27 per table
  REQUIRE_ERROR(nn::RotaryEmbedding(2, int64_t{1} << 40),
                "RotaryEmbedding(2, max_seq_len=1099511627776): max_seq_len 1099511627776 · "
                "dim/2 1 angles exceed the table limit 2^27 = 134217728 "
                "(RotaryEmbedding::kMaxTableEntries): max_seq_len must be <= 134217728 at dim 2");
  REQUIRE_ERROR(nn::RotaryEmbedding(256, (int64_t{1} << 20) + 1),
                "max_seq_len must be <= 1048576 at dim 256");
  REQUIRE(nn::RotaryEmbedding(2, 3).cos.shape() == Shape{3, 1});
}
