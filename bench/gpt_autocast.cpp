// bench/gpt_autocast.cpp — bench_gpt_autocast: the GPT-style training step of bench_tapegrad's
// `gpt` group (bench/harness.hpp GptLm: d 256, 4 pre-norm layers, 8 heads, T 256, B 16, AdamW
// lr 3e-4 weight decay 0.1 after clip_grad_norm_(1.0)) in float32 or with its forward and loss
// under tg::AutocastGuard(kBFloat16) (float32 master weights, the backward and the optimizer
// outside the guard, as PyTorch users write it). One configuration per process
// (`--one f32|bf16`) so that the process's peak RSS is that configuration's: bench/gpt_autocast.sh
// runs it interleaved with its PyTorch twin (bench/gpt_autocast_torch.py), round by round.
// Prints `# cpu:` (model, avx512_bf16 / amx_bf16), `# train GPT:` (parameters, first loss) and
// `metric gpt_amp.tg.<mode>[.cpu|.mib|.base] <value> <unit>`: the median step (wall and
// process CPU time), the peak RSS (ru_maxrss) and the RSS before the model was made.
// `--steps N` instead times N steps after one warm-up step and prints the mean (for perf);
// `--profile` prints tg::Profiler's per-op table of one step's forward and backward.
// Deliberately not here: the interleaving across processes and the table (bench/gpt_autocast.sh).
#include "bench/harness.hpp"

#include <fmt/format.h>
#include <sys/resource.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <set>
#include <string>

namespace {
using namespace tgbench;

// This process's CPU seconds (user + system): less sensitive than wall time to other jobs
// sharing the cores.
double cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

double maxrss_mib() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;  // KiB on Linux
}

struct Step {
  static constexpr int64_t B = 16, T = 256;
  std::shared_ptr<GptLm> m = std::make_shared<GptLm>(T, tg::AttentionMask::causal());
  tg::Tensor tokens = tg::randint(0, GptLm::V, {B, T});
  tg::Tensor gold = tg::randint(0, GptLm::V, {B * T});
  std::unique_ptr<tg::nn::AdamW> opt;
  bool bf16;
  explicit Step(bool bf16_) : bf16(bf16_) {
    tg::nn::AdamWOptions ao(3e-4);
    ao.weight_decay = 0.1;
    opt = std::make_unique<tg::nn::AdamW>(m->parameters(), ao);
  }
  tg::Tensor loss() {
    std::optional<tg::AutocastGuard> guard;
    if (bf16) guard.emplace(tg::kBFloat16);
    return tg::cross_entropy(m->forward(tokens).reshape({B * T, GptLm::V}), gold);
  }
  void operator()() {
    opt->zero_grad(true);
    tg::Tensor l = loss();
    l.backward();
    tg::nn::clip_grad_norm_(m->parameters(), 1.0);
    opt->step();
  }
};

// `--attention`: the model's attention alone (packed qkv (16, 256, 3, 8, 32), causal), forward +
// backward, in float32 and in bfloat16 (the float32 kernel on float32 copies), process CPU ms per
// call, interleaved: what the reduced path adds around the kernel.
int run_attention(int rounds) {
  tg::manual_seed(0);
  const tg::Tensor x = tg::randn({16, 256, 3, 8, 32});
  const tg::Tensor g = tg::randn({16, 256, 8, 32});
  auto call = [&](tg::DType dt) {
    tg::Tensor q = x.to(dt).requires_grad_(true);
    const double c0 = cpu_seconds();
    tg::AttentionResult r = tg::scaled_dot_product_attention_packed(q, tg::AttentionMask::causal());
    (r.output * g.to(dt)).sum().backward();
    return cpu_seconds() - c0;
  };
  std::vector<double> f32, bf16;
  call(tg::kFloat32), call(tg::kBFloat16);
  for (int i = 0; i < rounds; ++i)
    f32.push_back(call(tg::kFloat32)), bf16.push_back(call(tg::kBFloat16));
  fmt::print("attention fwd+bwd CPU ms: float32 {:.2f}, bfloat16 {:.2f}\n", median(f32) * 1e3,
             median(bf16) * 1e3);
  return 0;
}

int run(const std::string& mode, double budget, int64_t steps, bool profile) {
  const double base = maxrss_mib();
  tg::manual_seed(0);
  Step step(mode == "bf16");
  fmt::print("# train GPT: {} parameters, first loss {:.4f}\n", step.m->num_parameters(),
             step.loss().item<float>());
  if (profile) {  // one step after a warm-up: the per-op table, then clip and AdamW timed
    step();
    step.opt->zero_grad(true);
    tg::Tensor l;
    {
      tg::Profiler prof;
      l = step.loss();
      l.backward();
      fmt::print("{}", prof.table());
    }
    // The phases of a few more steps in process CPU time (no profiler).
    std::vector<double> ph[4];
    for (int i = 0; i < 5; ++i) {
      double c = cpu_seconds(), c1;
      step.opt->zero_grad(true);
      tg::Tensor li = step.loss();
      ph[0].push_back((c1 = cpu_seconds()) - c);
      li.backward();
      ph[1].push_back((c = cpu_seconds()) - c1);
      tg::nn::clip_grad_norm_(step.m->parameters(), 1.0);
      ph[2].push_back((c1 = cpu_seconds()) - c);
      step.opt->step();
      ph[3].push_back(cpu_seconds() - c1);
    }
    fmt::print(
        "CPU ms: forward {:.1f}, backward {:.1f}, clip_grad_norm_ {:.1f}, AdamW.step {:.1f}\n",
        median(ph[0]) * 1e3, median(ph[1]) * 1e3, median(ph[2]) * 1e3, median(ph[3]) * 1e3);
    return 0;
  }
  if (steps > 0) {
    step();  // warm-up
    const double c0 = cpu_seconds();
    auto t0 = Clock::now();
    for (int64_t i = 0; i < steps; ++i) step();
    const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
    fmt::print("{} steps of gpt {}: {:.2f} ms per step, {:.2f} ms CPU\n", steps, mode,
               dt / double(steps) * 1e3, (cpu_seconds() - c0) / double(steps) * 1e3);
    return 0;
  }
  step();  // warm-up (primitives created, caches warm)
  std::vector<double> t, cpu;
  auto t0 = Clock::now();
  while (t.size() < 3 ||
         (std::chrono::duration<double>(Clock::now() - t0).count() < budget && t.size() < 15)) {
    const double c0 = cpu_seconds();
    t.push_back(time_batch([&] { step(); }, 1));
    cpu.push_back(cpu_seconds() - c0);
  }
  emit("gpt_amp.tg." + mode, median(t) * 1e3, "ms");
  emit("gpt_amp.tg." + mode + ".cpu", median(cpu) * 1e3, "ms");
  emit("gpt_amp.tg." + mode + ".mib", maxrss_mib(), "MiB");
  emit("gpt_amp.tg." + mode + ".base", base, "MiB");
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  std::string mode;
  double budget = 4.0;
  int64_t steps = 0;
  bool profile = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--profile") profile = true;
    if (i + 1 >= argc) break;
    if (a == "--one")
      mode = argv[++i];
    else if (a == "--budget")
      budget = std::atof(argv[++i]);
    else if (a == "--steps")
      steps = std::atoll(argv[++i]);
  }
  if (mode == "attention") return run_attention(static_cast<int>(steps > 0 ? steps : 9));
  if (mode != "f32" && mode != "bf16") {
    fmt::print(stderr,
               "usage: bench_gpt_autocast --one f32|bf16|attention [--budget s] [--steps N] "
               "[--profile]\n");
    return 2;
  }
  fmt::print("{}\n", cpu_line());
  return run(mode, budget, steps, profile);
}
