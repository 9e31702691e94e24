// examples/tape_tour/main.cpp — a tour of the tools for studying backprop, on one small
// Transformer-style step: the tape as a table (with creation sites and gradient norms), as
// Graphviz DOT and JSON files; the profiler's per-op table for full against local attention; and
// anomaly mode catching a NaN in forward and an Inf in backward.
//   tape_tour [--out DIR] [--len T]
// Deliberately small: the library does the work (autograd/inspect.hpp, profiler.hpp, anomaly.hpp).
#include "autograd/openmp_wait.hpp"
#include "autograd/anomaly.hpp"
#include "autograd/inspect.hpp"
#include "autograd/profiler.hpp"
#include "common/cli.hpp"
#include "nn/attention.hpp"
#include "ops/ops.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>

using tg::Tensor;

namespace {

void inspect_tour(const std::string& out) {
  fmt::print("== 1. the tape of a small classifier step, in execution order\n");
  tg::manual_seed(0);
  Tensor tokens = tg::tensor(std::vector<int64_t>{1, 4, 2, 7, 3, 3}, {2, 3});
  Tensor target = tg::tensor(std::vector<int64_t>{0, 3, 1, 2, 0, 1}, {2, 3});
  Tensor emb = tg::randn({10, 8}).requires_grad_();
  Tensor W1 = (tg::randn({16, 8}) * 0.3).requires_grad_(), b1 = tg::zeros({16}).requires_grad_();
  Tensor W2 = (tg::randn({4, 16}) * 0.3).requires_grad_();
  tg::InspectGuard on;  // keep input shapes and gradient norms
  Tensor x = tg::embedding(tokens, emb);
  Tensor h = tg::gelu(tg::linear(tg::layer_norm(x, {8}), W1, b1));
  Tensor logits = tg::linear(h, W2);
  Tensor loss = tg::cross_entropy(logits.reshape({6, 4}), target.reshape({6}));
  loss.backward();
  tg::Graph g = tg::inspect(loss);
  fmt::print("{}", g.table());
  std::ofstream(out + "/graph.dot") << g.dot();
  std::ofstream(out + "/graph.json") << g.json();
  fmt::print(
      "wrote {0}/graph.dot and {0}/graph.json (render: dot -Tsvg {0}/graph.dot > graph.svg)\n\n",
      out);
}

void profile_tour(int64_t T) {
  const int64_t B = 2, E = 128, NH = 4;
  for (int local = 0; local < 2; ++local) {
    tg::manual_seed(0);
    tg::nn::MultiheadAttentionOptions o;
    o.batch_first = true;
    if (local) o.structure = tg::AttentionMask::local(64, 0);
    tg::nn::MultiheadAttention mha(E, NH, o);
    Tensor x = tg::randn({B, T, E});
    tg::Profiler prof;
    Tensor y = mha.forward(x, x, x, tg::Tensor(), false).first;
    y.sum().backward();
    prof.stop();
    fmt::print(
        "== 2{}. profiler: one MultiheadAttention step, (B, T, E, NH) = ({}, {}, {}, {}), {}\n",
        local ? "b" : "a", B, T, E, NH, local ? "local(64, 0) attention" : "full attention");
    fmt::print("{}\n", prof.table());
  }
}

void anomaly_tour() {
  fmt::print("== 3. anomaly mode\n");
  tg::AnomalyGuard on;
  try {
    Tensor q = tg::randn({1, 2, 4, 8}).requires_grad_();
    Tensor k = tg::randn({1, 2, 4, 8});
    q.data<float>()[(1 * 4 + 2) * 8] = NAN;  // head 1, query row 2
    tg::scaled_dot_product_attention(q, k, k);
  } catch (const tg::Error& e) {
    fmt::print("forward:  {}\n", e.what());
  }
  try {
    Tensor x = tg::tensor(std::vector<float>{4.f, 0.f, 1.f}).requires_grad_();
    tg::sqrt(x).sum().backward();  // d sqrt(x) / dx = 1 / (2 sqrt(x)) is inf at 0
  } catch (const tg::Error& e) {
    fmt::print("backward: {}\n", e.what());
  }
}

}  // namespace

int main(int argc, char** argv) {
  tg::passive_openmp_wait(argv);  // idle OpenMP threads sleep (openmp_wait.hpp says why)
  return tgx::run_main("tape_tour", [&] {
    tgx::ArgParser p("tape_tour", "A tour of tape inspection, the profiler and anomaly mode.");
    p.option("out", "runs/tape_tour", "where graph.dot and graph.json go")
        .option("len", "1024", "T for the profiler");
    if (!p.parse(argc, argv)) return 0;
    // Checked before any work: the full-attention pass keeps about 32·T² bytes (T = 4096:
    // 0.5 GB; T = 20000 took 12.9 GB).
    const int64_t len =
        tgx::int_option(p, "len", 1, 4096, "memory grows as T^2: T = 4096 needs about 0.5 GB");
    std::filesystem::create_directories(p.str("out"));
    inspect_tour(p.str("out"));
    profile_tour(len);
    anomaly_tour();
    return 0;
  });
}
