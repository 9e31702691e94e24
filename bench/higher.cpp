// bench/higher.cpp — the group "higher" of bench_tapegrad (tapegrad alone; each row's baseline is
// tapegrad's own first-order step, measured in the same process, interleaved): second order and
// activation checkpointing on a GPT-style language model (the `gpt` group's architecture: d 256, 4
// pre-norm layers, 8 heads, FF 1024, GELU, causal attention, vocabulary 256).
//   higher.step.T256 / higher.hvp.T256        loss + backward, and a Hessian-vector product of the
//                                             loss w.r.t. every parameter (grad with
//                                             create_graph, then the gradient of ⟨g, v⟩), B 16,
//                                             T 256, full causal
//   higher.{step,hvp,ckpt}.T4096 and *_peak   B 1, T 4096 with a 128-key causal window: time and
//                                             CPU peak memory above what was held before (the
//                                             activations; tg::cpu_memory) of the step, the HVP,
//                                             and the step with checkpoint_activations
// Deliberately not here: the PyTorch twin (its fused attention has no double backward).
#include "harness.hpp"

namespace tgbench {
namespace {

struct Rig {
  std::shared_ptr<GptLm> m;
  tg::Tensor tokens, gold;
  std::vector<tg::Tensor> params, v;  // v: a random direction, one tensor per parameter
  Rig(int64_t B, int64_t T, const tg::AttentionMask& structure)
      : m(std::make_shared<GptLm>(T, structure)) {
    tokens = tg::randint(0, GptLm::V, {B, T});
    gold = tg::randint(0, GptLm::V, {B * T});
    params = m->parameters();
    for (const tg::Tensor& p : params) v.push_back(tg::randn(p.shape()));
  }
  tg::Tensor loss() {
    const int64_t n = gold.numel();
    return tg::cross_entropy(m->forward(tokens).reshape({n, GptLm::V}), gold);
  }
  void step(bool ckpt) {  // the first-order step: loss and backward (no optimizer)
    m->blocks->checkpoint_activations = ckpt;
    m->zero_grad(true);
    loss().backward();
  }
  void hvp() {  // H·v: gradients with create_graph, then the gradient of ⟨g, v⟩
    tg::GradOptions cg;
    cg.create_graph = true;
    const std::vector<tg::Tensor> g = tg::grad({loss()}, params, {}, cg);
    tg::Tensor gv = (g[0] * v[0]).sum();
    for (size_t i = 1; i < g.size(); ++i) gv = gv + (g[i] * v[i]).sum();
    const std::vector<tg::Tensor> hv = tg::grad({gv}, params);
    (void)hv;
  }
};

// The CPU peak above what was held when f started, in MiB.
double peak_mib(const std::function<void()>& f) {
  const size_t base = tg::cpu_memory().allocated;
  tg::cpu_reset_peak_memory();
  f();
  return static_cast<double>(tg::cpu_memory().peak_allocated - base) / (1024.0 * 1024.0);
}

}  // namespace

void bench_higher(const Options& o) {
  {
    Rig r(16, 256, tg::AttentionMask::causal());
    std::vector<double> s =
        interleaved({[&] { r.step(false); }, [&] { r.hvp(); }}, o.budget * 3, 3);
    emit("higher.step.T256", s[0] * 1e3, "ms");
    emit("higher.hvp.T256", s[1] * 1e3, "ms");
  }
  Rig r(1, 4096, tg::AttentionMask::local(127, 0));
  emit("higher.step_peak.T4096", peak_mib([&] { r.step(false); }), "MiB");
  emit("higher.hvp_peak.T4096", peak_mib([&] { r.hvp(); }), "MiB");
  emit("higher.ckpt_peak.T4096", peak_mib([&] { r.step(true); }), "MiB");
  std::vector<double> s = interleaved(
      {[&] { r.step(false); }, [&] { r.hvp(); }, [&] { r.step(true); }}, o.budget * 3, 3);
  emit("higher.step.T4096", s[0] * 1e3, "ms");
  emit("higher.hvp.T4096", s[1] * 1e3, "ms");
  emit("higher.ckpt.T4096", s[2] * 1e3, "ms");
}

}  // namespace tgbench
