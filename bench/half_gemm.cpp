// bench/half_gemm.cpp — bench_half_gemm: tapegrad's bfloat16 GEMM (ops/matmul/reduced_gemm.hpp)
// against its own float32 matmul on the same CPU, one thread as bench/run.sh pins it, at
// n = 512, 1024, 2048: tg::matmul on bf16 tensors on the path the library picks (oneDNN where it
// runs), on the convert-then-sgemm fallback, and on float32; plus float16 (its path named).
// Candidates alternate batch by batch (bench/harness.hpp), median per candidate.
// Prints `# cpu:` (the model, avx512_bf16 / amx_bf16 present or not) and `metric half_gemm.<...>`
// lines; bfloat16 rows only where the CPU has bfloat16 instructions (a fallback-only machine
// prints a comment instead). bench/half_gemm_torch.py is the PyTorch 1.13 twin (torch.matmul on
// bf16 tensors). Deliberately not here: the table (bench/report.py), thread pinning (run.sh).
#include "bench/harness.hpp"
#include "ops/matmul/reduced_gemm.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <string>

namespace {
using namespace tgbench;

double gflops(int64_t n, double s) { return 2.0 * n * n * n / s * 1e-9; }

void bench(const Options& o, bool bf16_isa) {
  for (int64_t n : {512, 1024, 2048}) {
    tg::manual_seed(0);
    const tg::Tensor a = tg::randn({n, n}), b = tg::randn({n, n});
    const tg::Tensor ab = a.to(tg::kBFloat16), bb = b.to(tg::kBFloat16);
    const tg::Tensor ah = a.to(tg::kFloat16), bh = b.to(tg::kFloat16);
    tg::Tensor keep;
    auto f32 = [&] { keep = tg::matmul(a, b); };
    auto picked = [&] { keep = tg::matmul(ab, bb); };
    auto fallback = [&] {
      tg::gemm::set_path(tg::gemm::Path::Fallback);
      keep = tg::matmul(ab, bb);
      tg::gemm::reset_path();
    };
    auto f16 = [&] { keep = tg::matmul(ah, bh); };
    std::vector<double> s = interleaved({f32, picked, fallback, f16}, o.budget, n >= 1024 ? 3 : 5);
    emit(fmt::format("half_gemm.tg.f32.{}", n), gflops(n, s[0]), "GFLOP/s");
    if (bf16_isa) {
      emit(fmt::format("half_gemm.tg.bf16.{}", n), gflops(n, s[1]), "GFLOP/s");
      emit(fmt::format("half_gemm.tg.bf16_fallback.{}", n), gflops(n, s[2]), "GFLOP/s");
      emit(fmt::format("half_gemm.tg.bf16_over_f32.{}", n), s[0] / s[1], "x");
    } else {
      fmt::print("# half_gemm {}: no bf16 instructions on this CPU; fallback {:.1f} GFLOP/s\n", n,
                 gflops(n, s[2]));
    }
    emit(fmt::format("half_gemm.tg.f16.{}", n), gflops(n, s[3]), "GFLOP/s");
  }
}
}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--budget" && i + 1 < argc) o.budget = std::atof(argv[++i]);
  const auto flags = cpu_info().second;
  std::string impl;
  const bool onednn = tg::gemm::onednn_runs(tg::kBFloat16, &impl);
  std::string f16impl;
  tg::gemm::onednn_runs(tg::kFloat16, &f16impl);
  fmt::print("{}\n", cpu_line());
  fmt::print("# bf16 path: {} ({})\n# f16 path: {} ({})\n",
             tg::gemm::path_name(tg::gemm::path(tg::kBFloat16)), impl,
             tg::gemm::path_name(tg::gemm::path(tg::kFloat16)), f16impl);
  bench(o, onednn && (flags.count("avx512_bf16") || flags.count("amx_bf16")));
  return 0;
}
