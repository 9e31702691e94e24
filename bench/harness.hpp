// bench/harness.hpp — what bench_tapegrad's groups share: the options, emit() (one
// `metric <name> <value> <unit>` line), interleaved() (candidates timed in alternating batches,
// median per candidate), TrainRig (one model's training step) and cpu_info() / cpu_line() (the
// CPU's model and bf16 / AMX support, for the reduced-precision rows). Used by bench.cpp,
// nanogpt.cpp and the reduced-precision benches. Deliberately not here: the groups themselves.
#pragma once

#include "tapegrad.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace tgbench {

using Clock = std::chrono::steady_clock;

struct Options {
  double budget = 0.8;  // seconds per group of interleaved candidates (one size, one op)
  std::string filter;   // run only groups whose name contains this
};

// The CPU's model name and which of avx512_bf16 / amx_bf16 / amx_tile it reports (/proc/cpuinfo).
inline std::pair<std::string, std::set<std::string>> cpu_info() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, model = "unknown CPU";
  std::set<std::string> flags;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0 && model == "unknown CPU")
      model = line.substr(line.find(':') + 2);
    if (line.rfind("flags", 0) == 0 && flags.empty())
      for (const char* f : {"avx512_bf16", "amx_bf16", "amx_tile"})
        if ((line + " ").find(std::string(" ") + f + " ") != std::string::npos) flags.insert(f);
  }
  return {model, flags};
}
// `# cpu: <model> | avx512_bf16 yes|no | amx_bf16 yes|no | <n> thread(s)`, as the benches print it.
inline std::string cpu_line() {
  const auto [model, flags] = cpu_info();
  return fmt::format("# cpu: {} | avx512_bf16 {} | amx_bf16 {} | {} thread(s)", model,
                     flags.count("avx512_bf16") ? "yes" : "no",
                     flags.count("amx_bf16") ? "yes" : "no", tg::get_num_threads());
}

inline void emit(const std::string& name, double value, const char* unit) {
  fmt::print("metric {} {:.6g} {}\n", name, value, unit);
  std::fflush(stdout);
}

// Seconds per call of f, over one batch of `inner` calls.
inline double time_batch(const std::function<void()>& f, int64_t inner) {
  auto t0 = Clock::now();
  for (int64_t i = 0; i < inner; ++i) f();
  return std::chrono::duration<double>(Clock::now() - t0).count() / static_cast<double>(inner);
}

// Calls per batch so that one batch takes about `target` seconds (after a warm-up call).
inline int64_t calibrate(const std::function<void()>& f, double target) {
  f();
  int64_t inner = 1;
  while (inner < (int64_t{1} << 30)) {
    double t = time_batch(f, inner) * static_cast<double>(inner);
    if (t >= target) break;
    inner *= t < target / 16 ? 8 : 2;
  }
  return inner;
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Median seconds per call of each candidate, measured in alternating batches (A B A B …) until
// `budget` seconds are spent, with at least `min_batches` batches each.
inline std::vector<double> interleaved(const std::vector<std::function<void()>>& fs, double budget,
                                       int min_batches = 5) {
  const double batch_target = std::max(2e-3, budget / (8.0 * static_cast<double>(fs.size())));
  std::vector<int64_t> inner;
  for (const auto& f : fs) inner.push_back(calibrate(f, batch_target));
  std::vector<std::vector<double>> t(fs.size());
  auto t0 = Clock::now();
  for (int b = 0;; ++b) {
    for (size_t i = 0; i < fs.size(); ++i) t[i].push_back(time_batch(fs[i], inner[i]));
    double spent = std::chrono::duration<double>(Clock::now() - t0).count();
    if (b + 1 >= min_batches && spent >= budget) break;
  }
  std::vector<double> med;
  for (auto& v : t) med.push_back(median(v));
  return med;
}

struct TrainRig {
  std::shared_ptr<tg::nn::Module> model;
  std::unique_ptr<tg::nn::AdamW> opt;
  std::function<tg::Tensor()> loss;
  double max_grad_norm = 0;  // > 0: clip_grad_norm_(parameters, max_grad_norm) before the step
  void step() {
    opt->zero_grad(true);
    tg::Tensor l = loss();
    l.backward();
    if (max_grad_norm > 0) tg::nn::clip_grad_norm_(model->parameters(), max_grad_norm);
    opt->step();
  }
};

// The GPT-style language model of the `gpt` and `higher` groups: token Embedding(256, 256) +
// learned positions (GPT-2's wpe) for T positions, 4 pre-norm TransformerEncoderLayer(256, 8
// heads, FF 1024, GELU (erf), dropout 0, batch_first, norm_first) with the given self-attention
// structure (no dense mask), a final LayerNorm, Linear(256, 256) head.
struct GptLm : tg::nn::Module {
  static constexpr int64_t V = 256, E = 256, NH = 8, FF = 1024, L = 4;
  std::shared_ptr<tg::nn::Embedding> tok;
  std::shared_ptr<tg::nn::LearnedPositionalEmbedding> pos;
  std::shared_ptr<tg::nn::TransformerEncoder> blocks;
  std::shared_ptr<tg::nn::Linear> head;
  GptLm(int64_t T, const tg::AttentionMask& structure) : Module("GPT") {
    tok = register_module("tok", std::make_shared<tg::nn::Embedding>(V, E));
    pos = register_module("pos", std::make_shared<tg::nn::LearnedPositionalEmbedding>(T, E));
    tg::nn::TransformerLayerOptions lo;
    lo.dim_feedforward = FF;
    lo.dropout = 0.0;
    lo.activation = "gelu";
    lo.batch_first = true;
    lo.norm_first = true;
    lo.self_attn_structure = structure;
    tg::nn::TransformerEncoderLayer layer(E, NH, lo);
    blocks = register_module(
        "blocks", std::make_shared<tg::nn::TransformerEncoder>(
                      layer, L, std::make_shared<tg::nn::LayerNorm>(E), tg::nn::LayerClone::Fresh));
    head = register_module("head", std::make_shared<tg::nn::Linear>(E, V));
  }
  tg::Tensor forward(const tg::Tensor& tokens) {  // (B, T) int64 -> logits (B, T, V)
    return head->forward(blocks->forward(pos->forward(tok->forward(tokens))));
  }
};

// Second order and activation checkpointing on a GPT-style model (higher.cpp).
void bench_higher(const Options& o);

// The nanoGPT-shaped training step (nanogpt.cpp): the group and its `--steps` rig.
void bench_nanogpt(const Options& o);
TrainRig make_nanogpt_rig();

}  // namespace tgbench
