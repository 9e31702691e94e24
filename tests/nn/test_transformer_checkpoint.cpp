// tests/nn/test_transformer_checkpoint.cpp — checkpoint_activations on the Transformer stacks:
// the same loss and gradients bit for bit (float64, dropout on: each layer's recomputation draws
// the same masks), and only one node per layer kept after the forward.
#include "helpers.hpp"

#include "nn/transformer.hpp"

using namespace tg;

namespace {
std::vector<std::vector<double>> grads_of(nn::Module& m) {
  std::vector<std::vector<double>> out;
  for (const Tensor& p : m.parameters()) out.push_back(p.grad().contiguous().to_vector<double>());
  return out;
}
}  // namespace

TEST_CASE("checkpoint_activations: encoder and decoder stacks give the same gradients") {
  manual_seed(1);
  nn::TransformerLayerOptions o;
  o.dim_feedforward = 16;
  o.dropout = 0.2;
  o.batch_first = true;
  o.self_attn_structure = AttentionMask::causal();
  nn::TransformerEncoder enc(nn::TransformerEncoderLayer(8, 2, o), 2, nullptr,
                             nn::LayerClone::Fresh);
  nn::TransformerDecoder dec(nn::TransformerDecoderLayer(8, 2, o), 2, nullptr,
                             nn::LayerClone::Fresh);
  enc.to(kFloat64);
  dec.to(kFloat64);
  const Tensor src = randn({2, 5, 8}, kFloat64), tgt = randn({2, 4, 8}, kFloat64);
  auto run = [&](bool ckpt) {
    enc.checkpoint_activations = dec.checkpoint_activations = ckpt;
    enc.zero_grad();
    dec.zero_grad();
    manual_seed(9);
    const int64_t before = Tape::live_count();
    Tensor y = dec.forward(tgt, enc.forward(src));
    const int64_t kept = Tape::live_count() - before;
    Tensor loss = (y * y).mean();
    loss.backward();
    return std::make_tuple(loss.item<double>(), grads_of(enc), grads_of(dec), kept);
  };
  const auto [l0, e0, d0, kept0] = run(false);
  const auto [l1, e1, d1, kept1] = run(true);
  REQUIRE(l0 == l1);
  REQUIRE(e0 == e1);
  REQUIRE(d0 == d1);
  INFO("nodes kept: " << kept0 << " without, " << kept1 << " with checkpointing");
  REQUIRE(kept1 == 4);  // one checkpoint node per layer
  REQUIRE(kept0 > 40);
}
