// bench/bench.cpp — bench_tapegrad: the tapegrad side of the side-by-side benchmarks.
//
// Prints one machine-readable line per measurement, `metric <name> <value> <unit>`, and comment
// lines starting with '#'. bench/run.sh runs this program and bench/bench_torch.py alternately,
// prefixes each line with the round number, and bench/report.py turns the rounds into one
// table. Candidates measured inside one process (tg::matmul and raw cblas_sgemm) alternate
// batch by batch (A B A B …) and report the median batch.
//
// Adding a benchmark: write a `void bench_x(const Options&)` that calls emit(), add it to
// kGroups, add the PyTorch twin to bench_torch.py, and a row to report.py.
// Deliberately not here: aggregation across rounds and the table (report.py), thread pinning
// (run.sh exports OMP_NUM_THREADS / OPENBLAS_NUM_THREADS before starting us).
#include "bench/harness.hpp"
#include "ops/core/cpu/kernels.hpp"  // cpu::simd_kernels (--simd), the kernel families (variants)

#include <cblas.h>
#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

extern "C" char* openblas_get_corename();  // OpenBLAS: the kernel set it picked at load

namespace {
using namespace tgbench;

// ---- (a) matmul GFLOP/s: tg::matmul against raw cblas_sgemm on the same operands ----
void bench_matmul(const Options& o) {
  for (int64_t n : {64, 128, 256, 512, 1024, 2048}) {
    tg::Tensor a = tg::randn({n, n}), b = tg::randn({n, n});
    std::vector<float> c(static_cast<size_t>(n * n));
    const int ni = static_cast<int>(n);
    auto raw = [&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, ni, ni, ni, 1.0f, a.data<float>(), ni,
                  b.data<float>(), ni, 0.0f, c.data(), ni);
    };
    tg::Tensor keep;
    auto ours = [&] { keep = tg::matmul(a, b); };
    // Sanity: both sides compute the same product.
    raw();
    ours();
    const float* pk = keep.data<float>();
    double maxd = 0;
    for (size_t i = 0; i < c.size(); ++i)
      maxd = std::max(maxd, static_cast<double>(std::fabs(pk[i] - c[i])));
    if (maxd > 1e-3 * static_cast<double>(n))
      fmt::print("# WARNING matmul {}: max |tg - sgemm| = {}\n", n, maxd);
    std::vector<double> s = interleaved({ours, raw}, o.budget, n >= 1024 ? 3 : 5);
    const double flop =
        2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
    emit(fmt::format("matmul.tg.{}", n), flop / s[0] * 1e-9, "GFLOP/s");
    emit(fmt::format("matmul.blas.{}", n), flop / s[1] * 1e-9, "GFLOP/s");
  }
}

// ---- (b) per-op overhead: one recorded op on 4-element leaves, forward + backward ----
void bench_tiny(const Options& o) {
  tg::Tensor x = tg::tensor(std::vector<float>{1.0f, 2.0f, 3.0f, 4.0f}).requires_grad_();
  tg::Tensor w = tg::tensor(std::vector<float>{0.5f, 1.0f, 1.5f, 0.9f}).requires_grad_();
  tg::Tensor g = tg::ones({4});
  auto fwd = [&] { tg::Tensor y = x * w; };
  auto fwd_bwd = [&] {
    tg::Tensor y = x * w;
    y.backward(g);
  };
  auto chain10 = [&] {
    tg::Tensor y = x;
    for (int i = 0; i < 10; ++i) y = y * w;
    y.backward(g);
  };
  std::vector<double> s = interleaved({fwd, fwd_bwd, chain10}, o.budget * 1.5);
  emit("tiny.fwd.tg", s[0] * 1e6, "us");
  emit("tiny.fwd_bwd.tg", s[1] * 1e6, "us");
  emit("chain10.fwd_bwd.tg", s[2] * 1e6, "us");

  // A chain of five views (t, narrow, select, unsqueeze, expand) on an N x N float32 tensor,
  // no grad: O(1), the same cost for N = 64 and N = 4096 (each result shares the storage).
  for (int64_t n : {int64_t{64}, int64_t{4096}}) {
    tg::Tensor big = tg::zeros({n, n});
    auto chain = [&, n] {
      tg::Tensor v = big.t().narrow(0, 1, n / 2).select(1, 3).unsqueeze(0).expand({4, n / 2});
    };
    const double t = interleaved({chain}, o.budget * 0.5)[0];
    emit(fmt::format("views.chain.tg.{}", n), t * 1e6, "us");
  }
}

// ---- (c) nn::MultiheadAttention forward + backward (self-attention, batch_first, f32) ----
// The three masks of one size alternate batch by batch: none, causal (is_causal, no dense mask)
// and key padding ((B, T) bool, the last 25 % of keys padded in every row, True = padding).
struct MhaSize {
  int64_t B, T, E, NH;
};
const MhaSize kMhaSizes[] = {{32, 64, 128, 4}, {8, 256, 256, 8}, {2, 1024, 512, 8}};

void bench_mha(const Options& o) {
  for (const MhaSize& z : kMhaSizes) {
    tg::nn::MultiheadAttentionOptions mo;
    mo.batch_first = true;  // dropout 0, train mode (the default)
    tg::nn::MultiheadAttention mha(z.E, z.NH, mo);
    tg::Tensor x = tg::randn({z.B, z.T, z.E}).requires_grad_();
    tg::Tensor g = tg::randn({z.B, z.T, z.E});  // fixed upstream gradient
    tg::Tensor pad = tg::zeros({z.B, z.T}, tg::kBool);
    bool* pp = pad.data<bool>();
    for (int64_t b = 0; b < z.B; ++b)
      for (int64_t j = z.T - z.T / 4; j < z.T; ++j) pp[b * z.T + j] = true;
    auto step = [&](const tg::nn::MHAForwardOptions& f) {
      x.reset_grad();
      mha.zero_grad(true);
      tg::Tensor y = mha.forward(x, x, x, f).first;
      y.backward(g);
    };
    // cross-attention: the query is another tensor, so q, k and v are three projections with
    // the three (E, E) row blocks of in_proj_weight (views, not copies)
    tg::Tensor xq = tg::randn({z.B, z.T, z.E}).requires_grad_();
    auto cross = [&] {
      x.reset_grad();
      xq.reset_grad();
      mha.zero_grad(true);
      tg::nn::MHAForwardOptions f;
      f.need_weights = false;
      tg::Tensor y = mha.forward(xq, x, x, f).first;
      y.backward(g);
    };
    tg::nn::MHAForwardOptions none, causal, padded;
    none.need_weights = causal.need_weights = padded.need_weights = false;
    causal.is_causal = true;
    padded.key_padding_mask = pad;
    const bool big = z.T >= 1024;
    std::vector<double> s =
        interleaved({[&] { step(none); }, [&] { step(causal); }, [&] { step(padded); }, cross},
                    o.budget * (big ? 1.0 : 1.5), big ? 3 : 5);
    const std::string tag = fmt::format("{}x{}x{}x{}", z.B, z.T, z.E, z.NH);
    emit(fmt::format("mha.none.tg.{}", tag), s[0] * 1e3, "ms");
    emit(fmt::format("mha.causal.tg.{}", tag), s[1] * 1e3, "ms");
    emit(fmt::format("mha.pad.tg.{}", tag), s[2] * 1e3, "ms");
    emit(fmt::format("mha.cross.tg.{}", tag), s[3] * 1e3, "ms");
    // Peak CPU memory of one forward (train mode: the graph and what it saved stay alive),
    // above what was held before it (tg::cpu_memory counts every storage over 64 bytes).
    for (const bool is_cross : {false, true}) {
      tg::Tensor y;
      x.reset_grad();
      xq.reset_grad();
      mha.zero_grad(true);
      const size_t before = tg::cpu_memory().allocated;
      tg::cpu_reset_peak_memory();
      tg::nn::MHAForwardOptions f;
      f.need_weights = false;
      y = mha.forward(is_cross ? xq : x, x, x, f).first;
      const double mib = static_cast<double>(tg::cpu_memory().peak_allocated - before) / 1048576.0;
      emit(fmt::format("mha.peak_fwd.{}.tg.{}", is_cross ? "cross" : "self", tag), mib, "MiB");
    }
  }
}

// ---- (d) local attention, one configuration per process (--one local|dense T) ----
// sdpa forward + backward on q, k, v (1, 4, T, 64) f32 with the band i - 64 <= j <= i + 64, as
// AttentionMask::local(64, 64) ("local") or as a dense (T, T) bool mask ("dense"). Prints the
// median time of a few calls after a warm-up, and the peak RSS of this fresh process
// (ru_maxrss), with the RSS high-water mark before any tensor was made as "base".
double maxrss_mib() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;  // KiB on Linux
}

int run_one(const std::string& kind, int64_t T, double budget) {
  if (kind != "local" && kind != "dense") {
    fmt::print(stderr, "bench_tapegrad --one: kind must be local or dense, got '{}'\n", kind);
    return 2;
  }
  const double base = maxrss_mib();
  constexpr int64_t NH = 4, hs = 64, W = 64;
  tg::manual_seed(0);
  tg::Tensor q = tg::randn({1, NH, T, hs}).requires_grad_();
  tg::Tensor k = tg::randn({1, NH, T, hs}).requires_grad_();
  tg::Tensor v = tg::randn({1, NH, T, hs}).requires_grad_();
  tg::Tensor g = tg::randn({1, NH, T, hs});
  tg::AttentionMask mask = tg::AttentionMask::local(W, W);
  if (kind == "dense") {
    tg::Tensor band = tg::zeros({T, T}, tg::kBool);
    bool* p = band.data<bool>();
    for (int64_t i = 0; i < T; ++i)
      for (int64_t j = std::max<int64_t>(0, i - W); j <= std::min(T - 1, i + W); ++j)
        p[i * T + j] = true;
    mask = tg::AttentionMask::from_bool(band, tg::MaskPolarity::TrueAllowed);
  }
  auto step = [&] {
    for (tg::Tensor* t : {&q, &k, &v}) t->reset_grad();
    tg::Tensor y = tg::scaled_dot_product_attention(q, k, v, mask).output;
    y.backward(g);
  };
  auto t0 = Clock::now();
  step();  // warm-up
  const double first = std::chrono::duration<double>(Clock::now() - t0).count();
  // A call over twice the budget takes seconds: warm-up effects are noise there, keep the first.
  const int reps = first >= 2 * budget
                       ? 0
                       : static_cast<int>(std::clamp(budget / std::max(first, 1e-9), 1.0, 9.0));
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) t.push_back(time_batch(step, 1));
  if (t.empty()) t.push_back(first);
  const std::string name = fmt::format("local.{}.tg.{}", kind, T);
  emit(name + ".ms", median(t) * 1e3, "ms");
  emit(name + ".mib", maxrss_mib(), "MiB");
  emit(name + ".base", base, "MiB");
  return 0;
}

// ---- (e) one full training step: zero_grad, forward, cross-entropy, backward, AdamW step ----
// Float32, train mode, dropout 0.1 everywhere, the same batch every step (no data loading).
// Both models embed tokens, scale by √E, add sinusoidal positions (nn::PositionalEncoding) and
// apply dropout 0.1 (the PyTorch tutorial's PositionalEncoding), like bench_torch.py.
constexpr int64_t kTrainE = 128, kTrainNH = 4, kTrainFF = 512;

tg::nn::TransformerLayerOptions train_layer_options() {
  tg::nn::TransformerLayerOptions lo;
  lo.dim_feedforward = kTrainFF;
  lo.dropout = 0.1;
  lo.batch_first = true;
  return lo;
}

// (a) Encoder classifier: tokens (B, T) -> emb (B, T, E) -> 2 encoder layers -> mean over T
// -> Linear(E, 2). Vocab 8000, B 32, T 64.
struct EncoderClassifier : tg::nn::Module {
  static constexpr int64_t V = 8000, B = 32, T = 64, C = 2, L = 2;
  std::shared_ptr<tg::nn::Embedding> emb;
  std::shared_ptr<tg::nn::PositionalEncoding> pos;
  std::shared_ptr<tg::nn::Dropout> drop;
  std::shared_ptr<tg::nn::TransformerEncoder> encoder;
  std::shared_ptr<tg::nn::Linear> head;
  EncoderClassifier() : Module("EncoderClassifier") {
    emb = register_module("emb", std::make_shared<tg::nn::Embedding>(V, kTrainE));
    pos = register_module("pos", std::make_shared<tg::nn::PositionalEncoding>(kTrainE, 512));
    drop = register_module("drop", std::make_shared<tg::nn::Dropout>(0.1));
    tg::nn::TransformerEncoderLayer layer(kTrainE, kTrainNH, train_layer_options());
    encoder = register_module("encoder", std::make_shared<tg::nn::TransformerEncoder>(
                                             layer, L, nullptr, tg::nn::LayerClone::Fresh));
    head = register_module("head", std::make_shared<tg::nn::Linear>(kTrainE, C));
  }
  tg::Tensor forward(const tg::Tensor& tokens) {  // (B, T) int64 -> logits (B, C)
    tg::Tensor x = drop->forward(pos->forward(emb->forward(tokens) * std::sqrt(double(kTrainE))));
    return head->forward(tg::mean(encoder->forward(x), {1}));
  }
};

// (b) Seq2seq: nn::Transformer 2 + 2 layers, vocab 1000 per side, B 32, S = T = 20; causal
// target self-attention as the structural AttentionMask::causal() (no dense (T, T) mask).
struct Seq2Seq : tg::nn::Module {
  static constexpr int64_t V = 1000, B = 32, S = 20, T = 20, L = 2;
  std::shared_ptr<tg::nn::Embedding> src_emb, tgt_emb;
  std::shared_ptr<tg::nn::PositionalEncoding> pos;
  std::shared_ptr<tg::nn::Dropout> drop;
  std::shared_ptr<tg::nn::Transformer> transformer;
  std::shared_ptr<tg::nn::Linear> out;
  Seq2Seq() : Module("Seq2Seq") {
    src_emb = register_module("src_emb", std::make_shared<tg::nn::Embedding>(V, kTrainE));
    tgt_emb = register_module("tgt_emb", std::make_shared<tg::nn::Embedding>(V, kTrainE));
    pos = register_module("pos", std::make_shared<tg::nn::PositionalEncoding>(kTrainE, 512));
    drop = register_module("drop", std::make_shared<tg::nn::Dropout>(0.1));
    tg::nn::TransformerOptions to;
    to.d_model = kTrainE;
    to.nhead = kTrainNH;
    to.num_encoder_layers = to.num_decoder_layers = L;
    to.dim_feedforward = kTrainFF;
    to.dropout = 0.1;
    to.batch_first = true;
    to.decoder_self_attn_structure = tg::AttentionMask::causal();
    transformer = register_module("transformer", std::make_shared<tg::nn::Transformer>(to));
    out = register_module("out", std::make_shared<tg::nn::Linear>(kTrainE, V));
  }
  tg::Tensor embed(tg::nn::Embedding& e, const tg::Tensor& tokens) {
    return drop->forward(pos->forward(e.forward(tokens) * std::sqrt(double(kTrainE))));
  }
  // src (B, S), tgt (B, T) int64 -> logits (B, T, V)
  tg::Tensor forward(const tg::Tensor& src, const tg::Tensor& tgt) {
    return out->forward(transformer->forward(embed(*src_emb, src), embed(*tgt_emb, tgt)));
  }
};

// One training step for each model, over a fixed random batch; returns the step function.

TrainRig make_encoder_rig() {
  auto m = std::make_shared<EncoderClassifier>();
  using M = EncoderClassifier;
  tg::Tensor tokens = tg::randint(0, M::V, {M::B, M::T});
  tg::Tensor labels = tg::randint(0, M::C, {M::B});
  TrainRig r;
  r.model = m;
  r.opt = std::make_unique<tg::nn::AdamW>(m->parameters(), tg::nn::AdamWOptions(1e-4));
  r.loss = [m, tokens, labels] { return tg::cross_entropy(m->forward(tokens), labels); };
  return r;
}

TrainRig make_seq2seq_rig() {
  auto m = std::make_shared<Seq2Seq>();
  using M = Seq2Seq;
  tg::Tensor src = tg::randint(0, M::V, {M::B, M::S});
  tg::Tensor tgt = tg::randint(0, M::V, {M::B, M::T});
  tg::Tensor gold = tg::randint(0, M::V, {M::B * M::T});
  TrainRig r;
  r.model = m;
  r.opt = std::make_unique<tg::nn::AdamW>(m->parameters(), tg::nn::AdamWOptions(1e-4));
  r.loss = [m, src, tgt, gold] {
    return tg::cross_entropy(m->forward(src, tgt).reshape({M::B * M::T, M::V}), gold);
  };
  return r;
}

void bench_train(const Options& o) {
  TrainRig enc = make_encoder_rig(), s2s = make_seq2seq_rig();
  for (auto* r : {&enc, &s2s}) {  // same models as the twin: compare these comment lines
    fmt::print("# train {}: {} parameters, first loss {:.4f}\n", r->model->type_name(),
               r->model->num_parameters(), r->loss().item<float>());
  }
  std::vector<double> s = interleaved({[&] { enc.step(); }, [&] { s2s.step(); }}, o.budget * 3);
  emit("train.enc.tg", s[0] * 1e3, "ms");
  emit("train.s2s.tg", s[1] * 1e3, "ms");
}

// ---- (f) a GPT-style language model's training step ----
// Token Embedding(256, 256) + learned positions (GPT-2's wpe), 4 pre-norm
// TransformerEncoderLayer(256, 8 heads, FF 1024, GELU (erf), dropout 0, batch_first,
// norm_first) with causal self-attention as the structural AttentionMask::causal() (no dense
// (T, T) mask), a final LayerNorm, Linear(256, 256) head. B 16, T 256; cross_entropy over the
// (B·T, 256) logits against random targets; AdamW (lr 3e-4, weight decay 0.1) after
// clip_grad_norm_(1.0).
struct GPT : GptLm {
  static constexpr int64_t B = 16, T = 256;
  GPT() : GptLm(T, tg::AttentionMask::causal()) {}
};

TrainRig make_gpt_rig() {
  auto m = std::make_shared<GPT>();
  tg::Tensor tokens = tg::randint(0, GPT::V, {GPT::B, GPT::T});
  tg::Tensor gold = tg::randint(0, GPT::V, {GPT::B * GPT::T});
  tg::nn::AdamWOptions ao(3e-4);
  ao.weight_decay = 0.1;
  TrainRig r;
  r.model = m;
  r.opt = std::make_unique<tg::nn::AdamW>(m->parameters(), ao);
  r.max_grad_norm = 1.0;
  r.loss = [m, tokens, gold] {
    return tg::cross_entropy(m->forward(tokens).reshape({GPT::B * GPT::T, GPT::V}), gold);
  };
  return r;
}

void bench_gpt(const Options& o) {
  TrainRig r = make_gpt_rig();
  fmt::print("# train {}: {} parameters, first loss {:.4f}\n", r.model->type_name(),
             r.model->num_parameters(), r.loss().item<float>());
  std::vector<double> s = interleaved({[&] { r.step(); }}, o.budget * 3, 3);
  emit("train.gpt.tg", s[0] * 1e3, "ms");
}

// `--steps enc|s2s|gpt|nanogpt N`: N training steps of one model and nothing else (for perf
// record).
int run_steps(const std::string& kind, int64_t n) {
  if (kind != "enc" && kind != "s2s" && kind != "gpt" && kind != "nanogpt") {
    fmt::print(stderr, "bench_tapegrad --steps: kind must be enc, s2s, gpt or nanogpt, got '{}'\n",
               kind);
    return 2;
  }
  tg::manual_seed(0);
  TrainRig r = kind == "enc"   ? make_encoder_rig()
               : kind == "s2s" ? make_seq2seq_rig()
               : kind == "gpt" ? make_gpt_rig()
                               : make_nanogpt_rig();
  r.step();  // warm-up
  auto t0 = Clock::now();
  for (int64_t i = 0; i < n; ++i) r.step();
  const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
  fmt::print("{} steps of {}: {:.2f} ms per step\n", n, kind,
             dt / double(std::max<int64_t>(n, 1)) * 1e3);
  return 0;
}

// ---- (g) unary elementwise ops on one (16, 256, 1024) float32 tensor ----
// Forward alone (under NoGradGuard: nothing recorded) and forward + backward (y = f(x),
// y.backward(g) with a fixed random g, x's grad reset per call); the two alternate batch by batch.
void bench_unary(const Options& o) {
  using Fn = std::function<tg::Tensor(const tg::Tensor&)>;
  const std::pair<const char*, Fn> ops[] = {
      {"gelu", [](const tg::Tensor& t) { return tg::gelu(t); }},
      {"gelu_tanh", [](const tg::Tensor& t) { return tg::gelu(t, "tanh"); }},
      {"tanh", [](const tg::Tensor& t) { return tg::tanh(t); }},
      {"exp", [](const tg::Tensor& t) { return tg::exp(t); }},
      {"sigmoid", [](const tg::Tensor& t) { return tg::sigmoid(t); }},
      {"silu", [](const tg::Tensor& t) { return tg::silu(t); }},
  };
  const tg::Shape shape = {16, 256, 1024};
  tg::Tensor x = tg::randn(shape).requires_grad_();
  tg::Tensor g = tg::randn(shape);  // fixed upstream gradient
  for (const auto& [name, f] : ops) {
    auto fwd = [&] {
      tg::NoGradGuard no_grad;
      tg::Tensor y = f(x);
    };
    auto fwd_bwd = [&] {
      x.reset_grad();
      tg::Tensor y = f(x);
      y.backward(g);
    };
    std::vector<double> s = interleaved({fwd, fwd_bwd}, o.budget);
    emit(fmt::format("unary.{}.fwd.tg", name), s[0] * 1e3, "ms");
    emit(fmt::format("unary.{}.fwd_bwd.tg", name), s[1] * 1e3, "ms");
  }
  // the SwiGLU feed-forward of a small LLaMA (C 256, hidden 688) on (16, 128, 256), fwd + bwd
  tg::nn::SwiGLU ff(256, 688);
  tg::Tensor h = tg::randn({16, 128, 256}).requires_grad_();
  tg::Tensor gh = tg::randn({16, 128, 256});
  auto swiglu = [&] {
    h.reset_grad();
    ff.zero_grad(true);
    tg::Tensor y = ff.forward(h);
    y.backward(gh);
  };
  std::vector<double> s = interleaved({swiglu}, o.budget);
  emit("unary.swiglu.fwd_bwd.tg", s[0] * 1e3, "ms");
}

// ---- (h) row-wise ops over the last dim of (N, C) float32 ----
// softmax, layer_norm (nn::LayerNorm(C): weight 1, bias 0) and rms_norm (nn::RMSNorm(C, 1e-6):
// weight 1) forward + backward with a fixed random g, the grads of x, weight and bias reset per
// call, alternating batch by batch; then sum
// over the last dim and over dim 0 of (4096, 128), forward under NoGradGuard.
struct RowSize {
  int64_t N, C;
};
const RowSize kRowSizes[] = {{4096, 128}, {512, 1024}};

void bench_rowwise(const Options& o) {
  for (const RowSize& z : kRowSizes) {
    tg::Tensor x = tg::randn({z.N, z.C}).requires_grad_();
    tg::Tensor g = tg::randn({z.N, z.C});
    tg::nn::LayerNorm ln(z.C);
    auto softmax = [&] {
      x.reset_grad();
      tg::Tensor y = tg::softmax(x, -1);
      y.backward(g);
    };
    auto layer_norm = [&] {
      x.reset_grad();
      ln.zero_grad(true);
      tg::Tensor y = ln.forward(x);
      y.backward(g);
    };
    tg::nn::RMSNorm rms(z.C, 1e-6);
    auto rms_norm = [&] {
      x.reset_grad();
      rms.zero_grad(true);
      tg::Tensor y = rms.forward(x);
      y.backward(g);
    };
    std::vector<double> s = interleaved({softmax, layer_norm, rms_norm}, o.budget);
    const std::string tag = fmt::format("{}x{}", z.N, z.C);
    emit(fmt::format("rowwise.softmax.tg.{}", tag), s[0] * 1e3, "ms");
    emit(fmt::format("rowwise.layer_norm.tg.{}", tag), s[1] * 1e3, "ms");
    emit(fmt::format("rowwise.rms_norm.tg.{}", tag), s[2] * 1e3, "ms");
  }
  tg::Tensor x = tg::randn({4096, 128});
  auto sum_last = [&] {
    tg::NoGradGuard no_grad;
    tg::Tensor y = tg::sum(x, {-1});
  };
  auto sum_first = [&] {
    tg::NoGradGuard no_grad;
    tg::Tensor y = tg::sum(x, {0});
  };
  std::vector<double> s = interleaved({sum_last, sum_first}, o.budget);
  emit("rowwise.sum_last.tg.4096x128", s[0] * 1e6, "us");
  emit("rowwise.sum_first.tg.4096x128", s[1] * 1e6, "us");
  // rotary embeddings on (B 8, NH 8, T 256, hs 64) float32, forward + backward: the module's
  // tables (no gradient) against Hugging Face's rotate_half form with its (T, hs) tables
  tg::nn::RotaryEmbedding rope(64, 256);
  tg::Tensor q = tg::randn({8, 8, 256, 64}).requires_grad_();
  tg::Tensor gq = tg::randn({8, 8, 256, 64});
  auto rotary = [&] {
    q.reset_grad();
    tg::Tensor y = rope.forward(q);
    y.backward(gq);
  };
  s = interleaved({rotary}, o.budget);
  emit("rowwise.rope.tg.8x8x256x64", s[0] * 1e3, "ms");
}

// ---- (g) each kernel family's AVX-512 variant against the build's own, on this CPU ----
// The figures behind ops/core/cpu/isa.cpp's per-CPU preference list: per family, the same work with
// that family's AVX-512 variant and with the build's own (the others as chosen), alternating.
void bench_variants(const Options& o) {
  using tg::cpu::KernelFamily;
  if (!tg::cpu::set_simd_kernels(true)) {
    fmt::print("# variants: no AVX-512 in this build or CPU, nothing to compare\n");
    tg::cpu::reset_simd_kernels();
    return;
  }
  tg::cpu::reset_simd_kernels();
  tg::Tensor rows = tg::randn({4096, 128}).requires_grad_(), grows = tg::randn({4096, 128});
  tg::Tensor big = tg::randn({4, 256, 1024}).requires_grad_(), gbig = tg::randn({4, 256, 1024});
  tg::Tensor q = tg::randn({8, 8, 256, 64}).requires_grad_(), k = tg::randn({8, 8, 256, 64}),
             v = tg::randn({8, 8, 256, 64}), go = tg::randn({8, 8, 256, 64});
  tg::Tensor cols = tg::randn({4096, 128}), cols3 = tg::randn({64, 512, 128});
  const std::pair<KernelFamily, std::function<void()>> work[] = {
      {KernelFamily::Softmax,
       [&] {
         rows.reset_grad();
         tg::softmax(rows, -1).backward(grows);
       }},
      {KernelFamily::Unary,
       [&] {
         big.reset_grad();
         tg::Tensor y = tg::add(tg::add(tg::gelu(big), tg::tanh(big)), tg::sigmoid(big));
         tg::add(y, tg::exp(big)).backward(gbig);
       }},
      {KernelFamily::Attention,
       [&] {
         q.reset_grad();
         for (const tg::AttentionMask& m : {tg::AttentionMask(), tg::AttentionMask::causal()})
           tg::scaled_dot_product_attention(q, k, v, m).output.backward(go);
       }},
      {KernelFamily::Reduce,
       [&] {
         tg::NoGradGuard no_grad;
         tg::Tensor a = tg::sum(cols, {0}), b = tg::mean(cols3, {1});
       }},
  };
  const char* names[] = {"softmax", "unary", "attention", "reduce"};
  for (const auto& [family, f] : work) {
    auto with = [&, fam = family, fn = f](bool avx512) {
      return [=] {
        tg::cpu::set_kernel_variant(fam, avx512);
        fn();
      };
    };
    std::vector<double> s = interleaved({with(true), with(false)}, o.budget);
    tg::cpu::reset_simd_kernels();
    const char* name = names[static_cast<int>(family)];
    emit(fmt::format("variants.{}.avx512", name), s[0] * 1e3, "ms");
    emit(fmt::format("variants.{}.native", name), s[1] * 1e3, "ms");
  }
}

// ---- (h) grouped-query attention: the call with enable_gqa against the same call with k and v
// repeated (what a port without it writes), fwd+bwd, 8 query / 2 key-value heads (tapegrad only:
// torch 1.13 has neither scaled_dot_product_attention nor enable_gqa) ----
void bench_gqa(const Options& o) {
  const int64_t B = 8, NH = 8, NKV = 2, T = 256, hs = 64;
  tg::Tensor q = tg::randn({B, T, NH, hs}).requires_grad_();
  tg::Tensor k = tg::randn({B, T, NKV, hs}).requires_grad_();
  tg::Tensor v = tg::randn({B, T, NKV, hs}).requires_grad_();
  tg::Tensor go = tg::randn({B, T, NH, hs});
  for (const auto& [name, mask] : {std::pair<const char*, tg::AttentionMask>{"none", {}},
                                   {"causal", tg::AttentionMask::causal()}}) {
    tg::SDPAOptions so;
    so.heads_last = true;
    auto step = [&](bool gqa) {
      q.reset_grad(), k.reset_grad(), v.reset_grad();
      tg::SDPAOptions s2 = so;
      s2.enable_gqa = gqa;
      const tg::Tensor kk = gqa ? k : tg::repeat_interleave(k, NH / NKV, 2);
      const tg::Tensor vv = gqa ? v : tg::repeat_interleave(v, NH / NKV, 2);
      tg::scaled_dot_product_attention(q, kk, vv, mask, s2).output.backward(go);
    };
    std::vector<double> s = interleaved({[&] { step(true); }, [&] { step(false); }}, o.budget);
    emit(fmt::format("gqa.{}.gqa", name), s[0] * 1e3, "ms");
    emit(fmt::format("gqa.{}.repeated", name), s[1] * 1e3, "ms");
  }
}

struct Group {
  const char* name;
  void (*run)(const Options&);
};
const Group kGroups[] = {
    {"matmul", bench_matmul},      // tg::matmul vs raw sgemm
    {"tiny", bench_tiny},          // per-op overhead
    {"mha", bench_mha},            // nn::MultiheadAttention
    {"train", bench_train},        // encoder-classifier and seq2seq training steps
    {"unary", bench_unary},        // gelu, tanh, exp, sigmoid, silu, the SwiGLU block
    {"rowwise", bench_rowwise},    // softmax, layer_norm, sum
    {"gpt", bench_gpt},            // a GPT-style training step
    {"nanogpt", bench_nanogpt},    // nanoGPT's CPU recipe shape (nanogpt.cpp)
    {"variants", bench_variants},  // each kernel family's AVX-512 variant vs the build's own
    {"gqa", bench_gqa},            // grouped-query SDPA vs k and v repeated
    {"higher", bench_higher},      // HVP and checkpointing vs the first-order step (higher.cpp)
};

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--budget" && i + 1 < argc) {
      o.budget = std::atof(argv[++i]);
    } else if (arg == "--filter" && i + 1 < argc) {
      o.filter = argv[++i];
    } else if (arg == "--one" && i + 2 < argc) {
      std::string kind = argv[i + 1];
      return run_one(kind, std::atoll(argv[i + 2]), o.budget);
    } else if (arg == "--steps" && i + 2 < argc) {
      return run_steps(argv[i + 1], std::atoll(argv[i + 2]));
    } else if (arg == "--blas-core") {
      fmt::print("{}\n", openblas_get_corename());
      return 0;
    } else if (arg == "--simd") {  // what our own kernels run on (ops/core/cpu/isa.cpp)
      fmt::print("{}\n", tg::cpu::simd_kernels());
      return 0;
    } else if (arg == "--choice") {  // the same, with the CPU model and how it was chosen
      fmt::print("{}\n", tg::cpu::kernel_choice());
      return 0;
    } else if (arg == "--native-simd") {  // the build's own kernels, not AVX-512's (A/B runs)
      tg::cpu::set_simd_kernels(false);
    } else {
      fmt::print(
          stderr,
          "usage: bench_tapegrad [--budget SECONDS] [--filter GROUP] [--native-simd] [--blas-core] "
          "[--simd] [--choice]\n"
          "       bench_tapegrad [--budget SECONDS] --one local|dense T\n"
          "       bench_tapegrad --steps enc|s2s|gpt|nanogpt N   (N steps, for a profiler)\n"
          "groups: matmul, tiny, mha, train, unary, rowwise, gpt, nanogpt, variants, gqa, higher "
          "(local "
          "runs "
          "only "
          "through "
          "--one, one process each)\n");
      return 2;
    }
  }
  fmt::print("# bench_tapegrad: {} thread(s), budget {} s per group\n", tg::get_num_threads(),
             o.budget);
  tg::manual_seed(0);
  for (const Group& g : kGroups)
    if (o.filter.empty() || std::string(g.name).find(o.filter) != std::string::npos) g.run(o);
  return 0;
}
