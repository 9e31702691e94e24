// tests/dist/model.hpp — the small float64 Transformer the DDP / ZeRO / checkpoint tests train,
// its seeded micro-batches, and a reference trainer (one process, gradient accumulation).
#pragma once

#include "helpers.hpp"
#include "nn/checkpoint_distributed.hpp"
#include "nn/ddp.hpp"
#include "nn/dist/dist.hpp"
#include "nn/zero.hpp"

#include <tapegrad.hpp>

namespace tdt {

using namespace tg;

// A Transformer encoder layer (d 8, 2 heads, ff 16, no dropout) and a linear head.
struct TinyNet : nn::Module {
  std::shared_ptr<nn::TransformerEncoderLayer> layer;
  std::shared_ptr<nn::Linear> head;
  std::shared_ptr<nn::Linear> spare;  // only with unused = true: never in the loss
  explicit TinyNet(bool unused = false, int64_t d = 8) : nn::Module("TinyNet") {
    nn::TransformerLayerOptions o;
    o.dim_feedforward = 16;
    o.dropout = 0;
    o.batch_first = true;
    layer = register_module("layer", std::make_shared<nn::TransformerEncoderLayer>(d, 2, o));
    head = register_module("head", std::make_shared<nn::Linear>(d, 3));
    if (unused) spare = register_module("spare", std::make_shared<nn::Linear>(d, 2));
    to(kFloat64);
  }
  bool checkpointed = false;  // the layer under tg::checkpoint (recomputed in backward)
  Tensor loss(const Tensor& x, const Tensor& y) {
    Tensor h =
        checkpointed
            ? checkpoint([this](const std::vector<Tensor>& in) { return (*layer)(in[0]); }, {x})
            : (*layer)(x);
    Tensor out = (*head)(h);
    return (out - y).pow(2.0).mean();
  }
};

// Micro-batch k of step s: x (2, 4, 8), y (2, 4, 3), the same on every rank.
inline std::pair<Tensor, Tensor> batch(int64_t s, int64_t k) {
  Generator& g = default_generator();
  const std::string saved = g.get_state();
  manual_seed(1000 + 97 * static_cast<uint64_t>(s) + static_cast<uint64_t>(k));
  Tensor x = randn({2, 4, 8}, kFloat64), y = randn({2, 4, 3}, kFloat64);
  g.set_state(saved);
  return {x, y};
}

inline std::shared_ptr<TinyNet> make_net(uint64_t seed, bool unused = false) {
  manual_seed(seed);
  return std::make_shared<TinyNet>(unused);
}

inline nn::AdamWOptions adamw() {
  nn::AdamWOptions o(3e-2);
  o.weight_decay = 0.1;
  return o;
}

// Two groups (decay / no decay), as real recipes have: ZeRO must honour each group's options.
inline std::vector<nn::ParamGroup> groups(nn::Module& m) {
  std::vector<Tensor> decay, no_decay;
  for (auto& [name, p] : m.named_parameters()) (p.dim() >= 2 ? decay : no_decay).push_back(p);
  return {nn::ParamGroup(decay), nn::ParamGroup(no_decay, {{"weight_decay", 0.0}})};
}

inline std::vector<double> flat_params(nn::Module& m) {
  std::vector<double> out;
  for (auto& p : m.parameters()) {
    auto v = p.detach().to_vector<double>();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

inline double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

// One process simulating W ranks: for each step, rank r's micro-batches k = r, W + r, ...
// (`micro` of them, each loss scaled by 1/micro) are accumulated in .grad() as that rank would,
// the W accumulations are summed in rank order and divided by W, then the optimizer steps. The
// float sums thus associate as the ranks' do (gradient accumulation, then the all-reduce):
// Adam's normalisation turns a reassociation of nearly cancelling sums into ~1e-11 differences
// after 20 steps, more than the 1e-12 these tests hold DDP to.
inline void reference_steps(TinyNet& net, nn::Optimizer& opt, int64_t s0, int64_t s1, int W,
                            int micro = 1, const std::function<void(int64_t)>& before_step = {}) {
  auto params = net.parameters();
  for (int64_t s = s0; s < s1; ++s) {
    std::vector<Tensor> total(params.size());
    for (int r = 0; r < W; ++r) {
      opt.zero_grad();
      for (int j = 0; j < micro; ++j) {
        auto [x, y] = batch(s, static_cast<int64_t>(j) * W + r);
        Tensor l = net.loss(x, y);
        (micro == 1 ? l : l * (1.0 / micro)).backward();
      }
      NoGradGuard ng;
      for (size_t i = 0; i < params.size(); ++i) {
        Tensor g = params[i].grad().clone();
        total[i] = r == 0 ? g : total[i] + g;
      }
    }
    {
      NoGradGuard ng;
      for (size_t i = 0; i < params.size(); ++i)
        params[i].set_grad(total[i] / static_cast<double>(W));
    }
    if (before_step) before_step(s);
    opt.step();
  }
}

}  // namespace tdt
