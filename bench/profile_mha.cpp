// bench/profile_mha.cpp — profile_mha: a driver for profilers (perf record, callgrind): runs
// nn::MultiheadAttention forward + backward (self-attention, batch_first, f32, train mode, dropout
// 0, need_weights false, as in bench_tapegrad's mha rows) for one size and mask, N times, and
// prints the time per call of the forward pieces measured separately (the packed in-projection,
// the packed sdpa, which reads the heads in place, and the out-projection; as the module does
// for mha(x, x, x)) and of the whole forward and backward.
//   profile_mha B T E NH none|causal|pad [N] [nopieces]
// With `nopieces` only the module's forward + backward run (what perf should see).
#include "tapegrad.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <string>

namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count() * 1e3;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 6) {
    fmt::print(stderr, "usage: profile_mha B T E NH none|causal|pad [N] [nopieces]\n");
    return 2;
  }
  const int64_t B = std::atoll(argv[1]), T = std::atoll(argv[2]), E = std::atoll(argv[3]),
                NH = std::atoll(argv[4]);
  const std::string kind = argv[5];
  const int n = argc > 6 ? std::atoi(argv[6]) : 20;
  const bool pieces = !(argc > 7 && std::string(argv[7]) == "nopieces");
  tg::manual_seed(0);
  tg::nn::MultiheadAttentionOptions mo;
  mo.batch_first = true;
  tg::nn::MultiheadAttention mha(E, NH, mo);
  tg::Tensor x = tg::randn({B, T, E}).requires_grad_();
  tg::Tensor g = tg::randn({B, T, E});
  tg::Tensor pad = tg::zeros({B, T}, tg::kBool);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = T - T / 4; j < T; ++j) pad.data<bool>()[b * T + j] = true;
  tg::nn::MHAForwardOptions f;
  f.need_weights = false;
  f.is_causal = kind == "causal";
  if (kind == "pad") f.key_padding_mask = pad;
  tg::AttentionMask mask;
  if (kind == "causal") mask = tg::AttentionMask::causal();
  if (kind == "pad") mask = tg::AttentionMask::key_padding(pad, tg::MaskPolarity::TrueBlocked);

  double fwd = 0, bwd = 0, inproj = 0, split = 0, sdpa = 0, merge = 0;
  for (int it = 0; it <= n; ++it) {  // iteration 0 is a warm-up
    x.reset_grad();
    mha.zero_grad(true);
    auto t0 = Clock::now();
    tg::Tensor y = mha.forward(x, x, x, f).first;
    double tf = since(t0);
    t0 = Clock::now();
    y.backward(g);
    double tb = since(t0);
    if (!pieces) {
      if (it > 0) fwd += tf, bwd += tb;
      continue;
    }
    // The forward's pieces, recorded like in the module (so their tape work counts too).
    t0 = Clock::now();
    tg::Tensor qkv = tg::linear(x, mha.in_proj_weight, mha.in_proj_bias);  // packed (B, T, 3E)
    double ti = since(t0);
    t0 = Clock::now();
    tg::Tensor heads = tg::reshape(qkv, {B, T, 3, NH, E / NH});  // a view: no head split
    double ts = since(t0);
    t0 = Clock::now();
    tg::Tensor o = tg::scaled_dot_product_attention_packed(heads, mask).output;  // (B, T, NH, hs)
    double ta = since(t0);
    t0 = Clock::now();
    tg::Tensor out = mha.out_proj->forward(tg::reshape(o, {B, T, E}));
    double tm = since(t0);
    if (it > 0) fwd += tf, bwd += tb, inproj += ti, split += ts, sdpa += ta, merge += tm;
  }
  fmt::print("MHA ({}, {}, {}, {}) {}: forward {:.2f} ms, backward {:.2f} ms per call ({} calls)\n",
             B, T, E, NH, kind, fwd / n, bwd / n, n);
  if (pieces)
    fmt::print(
        "  forward pieces (timed separately): in-proj linear {:.2f}, head view {:.2f}, sdpa "
        "{:.2f}, head merge (a view) + out_proj {:.2f} ms\n",
        inproj / n, split / n, sdpa / n, merge / n);
  return 0;
}
