// bench/attention_bf16.cpp — bench_attention_bf16: the fused CPU attention forward + backward on
// bfloat16 operands, with its products on AVX512-BF16 dot products (ops/attention/cpu/bf16.hpp,
// TG_ATTENTION_BF16=dot) and on float32 products (=float32), against tapegrad's float32 fused
// attention on the same values; B 1, 8 heads, hs 64, T 1024 … 8192, causal and local (128, 0), the
// thread count as given (bench/run.sh pins one). Candidates alternate batch by batch
// (bench/harness.hpp), median per candidate. Prints `# cpu:` (model, avx512_bf16 / amx_bf16) and
// `metric attention_bf16.<mask>.<T>.<candidate>` lines in ms and the ratios float32 / candidate;
// dot rows only where the dot products run. Deliberately not here: PyTorch (1.13 has no CPU SDPA).
//   bench_attention_bf16 [--budget s] [--t 1024,2048] [--hs 64]
#include "bench/harness.hpp"
#include "ops/attention/cpu/bf16.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <sstream>
#include <string>

namespace {
using namespace tgbench;

// Forward and backward of one SDPA call on leaves of dtype dt (values from x32).
struct Call {
  tg::Tensor q, k, v, g;
  tg::AttentionMask mask;
  void operator()() const {
    tg::Tensor ql = q.detach().requires_grad_(), kl = k.detach().requires_grad_(),
               vl = v.detach().requires_grad_();
    tg::Tensor o = tg::scaled_dot_product_attention(ql, kl, vl, mask).output;
    o.backward(g);
  }
};

void bench(const Options& o, const std::vector<int64_t>& Ts, int64_t hs, bool dot) {
  const std::vector<std::pair<const char*, tg::AttentionMask>> masks = {
      {"causal", tg::AttentionMask::causal()}, {"local128", tg::AttentionMask::local(128, 0)}};
  for (const auto& [name, mask] : masks)
    for (int64_t T : Ts) {
      tg::manual_seed(0);
      // bfloat16 values in both: the float32 candidate multiplies the same numbers
      auto make = [&](tg::DType dt) { return tg::randn({1, 8, T, hs}).to(tg::kBFloat16).to(dt); };
      const tg::Tensor q = make(tg::kFloat32), k = make(tg::kFloat32), v = make(tg::kFloat32),
                       g = make(tg::kFloat32);
      const Call f32{q, k, v, g, mask};
      const Call b16{q.to(tg::kBFloat16), k.to(tg::kBFloat16), v.to(tg::kBFloat16),
                     g.to(tg::kBFloat16), mask};
      auto with = [&](tg::cpu::AttentionBf16 m) {
        return [&b16, m] {
          tg::cpu::set_attention_bf16(m);
          b16();
          tg::cpu::reset_attention_bf16();
        };
      };
      std::vector<std::function<void()>> fs = {f32, with(tg::cpu::AttentionBf16::Float32)};
      if (dot) fs.push_back(with(tg::cpu::AttentionBf16::Dot));
      const std::vector<double> s = interleaved(fs, o.budget, T >= 4096 ? 2 : 3);
      const std::string at = fmt::format("attention_bf16.{}.{}", name, T);
      emit(at + ".f32", s[0] * 1e3, "ms");
      emit(at + ".bf16_f32products", s[1] * 1e3, "ms");
      emit(at + ".f32_over_bf16_f32products", s[0] / s[1], "x");
      if (!dot) continue;
      emit(at + ".bf16_dot", s[2] * 1e3, "ms");
      emit(at + ".f32_over_bf16_dot", s[0] / s[2], "x");
    }
}
}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::vector<int64_t> Ts = {1024, 2048, 4096, 8192};
  int64_t hs = 64;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--budget") o.budget = std::atof(argv[i + 1]);
    if (a == "--hs") hs = std::atoll(argv[i + 1]);
    if (a == "--t") {
      Ts.clear();
      std::stringstream ss(argv[i + 1]);
      for (std::string t; std::getline(ss, t, ',');) Ts.push_back(std::atoll(t.c_str()));
    }
  }
  const bool dot = tg::cpu::attention_bf16_dot_available();
  fmt::print("{}\n# bf16 attention products: {}\n", cpu_line(),
             dot ? "AVX512-BF16 dot products (no AMX tiles)" : "float32 (no AVX512-BF16 here)");
  bench(o, Ts, hs, dot);
  return 0;
}
