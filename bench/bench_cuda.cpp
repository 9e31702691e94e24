// bench/bench_cuda.cpp — tapegrad on the GPU: fused attention forward+backward throughput for
// (B, NH, T, hs) = (4, 16, T, 64), full, causal and local (128, 0), float32 (and TF32 matmuls
// off; attention is our own kernel), plus one training step of a small Transformer classifier.
// Prints `metric <name> <value> <unit>` lines like bench/bench_torch_cuda.py, which measures
// PyTorch on the same machine; bench/gpu_report.py puts both in one table with ratios.
// FLOPs counted as FlashAttention does: forward 4·B·NH·hs·pairs, backward 2.5x forward, where
// pairs is the number of (query, key) pairs the mask allows (T·T full, about T²/2 causal,
// about 129·T local). Exits 77 without a GPU.
#include "autograd/tape.hpp"
#include "nn/layers.hpp"
#include "nn/optim.hpp"
#include "nn/transformer.hpp"
#include "ops/attention/attention.hpp"
#include "ops/ops.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

using namespace tg;
namespace {
double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
// Median seconds per call of f (synchronised), after a warm-up, over `reps` timed calls.
double time_it(const std::function<void()>& f, int reps) {
  f();
  cuda_synchronize();
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const double t0 = now();
    f();
    cuda_synchronize();
    t.push_back(now() - t0);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}
double pairs(const std::string& kind, int64_t T) {
  if (kind == "full") return static_cast<double>(T) * T;
  if (kind == "causal") return static_cast<double>(T) * (T + 1) / 2;
  return static_cast<double>(T) * 129 - 128.0 * 129 / 2;  // local (128, 0)
}
AttentionMask mask_of(const std::string& kind) {
  if (kind == "full") return AttentionMask();
  if (kind == "causal") return AttentionMask::causal();
  return AttentionMask::local(128, 0);
}
void attention(const std::vector<int64_t>& Ts) {
  const int64_t B = 4, NH = 16, hs = 64;
  for (const std::string kind : {"full", "causal", "local"}) {
    for (int64_t T : Ts) {
      manual_seed(0);
      Tensor q = randn({B, NH, T, hs}, kFloat32, cuda_device()).requires_grad_();
      Tensor k = randn({B, NH, T, hs}, kFloat32, cuda_device()).requires_grad_();
      Tensor v = randn({B, NH, T, hs}, kFloat32, cuda_device()).requires_grad_();
      Tensor g = randn({B, NH, T, hs}, kFloat32, cuda_device());
      const AttentionMask m = mask_of(kind);
      const int reps = T >= 8192 ? 3 : 10;
      const double fwd = time_it(
          [&] {
            NoGradGuard ng;
            scaled_dot_product_attention(q, k, v, m);
          },
          reps);
      const double fb = time_it(
          [&] {
            Tensor o = scaled_dot_product_attention(q, k, v, m).output;
            o.backward(g);
          },
          reps);
      const double f = 4.0 * B * NH * hs * pairs(kind, T);
      fmt::print("metric tg_attn_{}_T{}_fwd {:.6g} TFLOP/s\n", kind, T, f / fwd / 1e12);
      fmt::print("metric tg_attn_{}_T{}_fwdbwd {:.6g} TFLOP/s\n", kind, T, 3.5 * f / fb / 1e12);
      std::fflush(stdout);
    }
  }
}
// One AdamW step of the text classifier's shape: batch 32, T 256, d_model 64, 2 pre-norm layers.
void train_step() {
  manual_seed(0);
  nn::TransformerLayerOptions o;
  o.dim_feedforward = 256;
  o.dropout = 0.1;
  o.activation = "gelu";
  o.batch_first = true;
  o.norm_first = true;
  nn::Embedding emb(6000, 64);
  nn::TransformerEncoderLayer l1(64, 4, o), l2(64, 4, o);
  nn::Linear head(64, 2);
  std::vector<Tensor> params;
  for (nn::Module* m : std::vector<nn::Module*>{&emb, &l1, &l2, &head}) {
    m->to(cuda_device());
    for (const Tensor& p : m->parameters()) params.push_back(p);
  }
  nn::AdamW opt(params, nn::AdamWOptions(1e-3));
  Tensor x = randint(0, 6000, {32, 256}).to(cuda_device());
  Tensor y = randint(0, 2, {32}).to(cuda_device());
  const double t = time_it(
      [&] {
        opt.zero_grad();
        Tensor h = l2(l1(emb(x)));
        Tensor loss = cross_entropy(head(mean(h, {1})), y);
        loss.backward();
        opt.step();
      },
      20);
  fmt::print("metric tg_train_classifier_step {:.6g} ms\n", t * 1e3);
}
}  // namespace

int main(int argc, char** argv) {
  if (cuda_device_count() == 0) {
    std::printf("no CUDA device: skipped\n");
    return 77;
  }
  std::vector<int64_t> Ts = {1024, 2048, 4096, 8192, 16384};
  if (argc > 1) Ts = {std::stoll(argv[1])};
  train_step();
  attention(Ts);
  CudaMemory m = cuda_memory();
  fmt::print("metric tg_peak_allocated {:.6g} MiB\n", m.peak_allocated / 1048576.0);
  return 0;
}
