// ops/matmul/cpu/reduced_gemm.cpp — the bfloat16 / float16 GEMM's path (gemm::path: forced by
// TG_GEMM_BF16 or set_path, else the best the build and CPU run) and its fallback: both operands
// converted to float32 through autograd/convert.hpp, OpenBLAS sgemm (cpu::gemm<float>), the
// product rounded once. The fallback does the work autocast-off would do (a float32 GEMM) plus
// the conversions, never more. Deliberately not here: oneDNN (onednn.cpp), float32 / float64.
#include "ops/matmul/cpu/reduced_gemm.hpp"

#include "autograd/convert.hpp"
#include "ops/core/cpu/kernels.hpp"
#include "ops/matmul/reduced_gemm.hpp"

#include <fmt/format.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

namespace tg {
namespace gemm {
namespace {
// -1: not forced; else the forced Path.
std::atomic<int> g_forced{-2};  // -2: the environment not read yet

int forced_from_env() {
  const char* v = std::getenv("TG_GEMM_BF16");
  if (!v || !*v) return -1;
  const std::string s(v);
  if (s == "onednn") return static_cast<int>(Path::OneDnn);
  if (s == "fallback") return static_cast<int>(Path::Fallback);
  throw Error(fmt::format("TG_GEMM_BF16={}: expected onednn or fallback", s));
}
int forced() {
  int f = g_forced.load();
  if (f == -2) {
    f = forced_from_env();
    g_forced.store(f);
  }
  return f;
}
}  // namespace

const char* path_name(Path p) { return p == Path::OneDnn ? "onednn" : "fallback"; }
bool onednn_built() { return cpu::onednn_compiled(); }

bool onednn_runs(DType dtype, std::string* impl) {
  if (!is_reduced(dtype))
    throw Error(
        fmt::format("gemm::onednn_runs: dtype {} is not bfloat16 or float16", dtype_name(dtype)));
  // One probe per dtype (a primitive creation): cached.
  static std::mutex mu;
  static std::string impls[2], whys[2];
  static bool probed[2] = {false, false};
  const int i = dtype == kFloat16;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!probed[i]) {
      impls[i] = cpu::onednn_impl(dtype, &whys[i]);
      probed[i] = true;
    }
  }
  if (impl) *impl = impls[i].empty() ? whys[i] : impls[i];
  return !impls[i].empty();
}

Path path(DType dtype) {
  const int f = forced();
  if (f >= 0) return static_cast<Path>(f);
  return onednn_runs(dtype) ? Path::OneDnn : Path::Fallback;
}

void set_path(Path p) {
  if (p == Path::OneDnn && !onednn_built()) {
    std::string why;
    cpu::onednn_impl(kBFloat16, &why);
    throw Error("gemm::set_path(onednn): " + why);
  }
  g_forced.store(static_cast<int>(p));
}
void reset_path() { g_forced.store(-2); }

}  // namespace gemm

namespace cpu {
namespace {
// Per-thread float32 buffers, grown and kept: a fresh allocation per call would page-fault its
// way through megabytes on every large product.
float* scratch(int slot, int64_t n) {
  thread_local std::vector<float> buf[3];
  std::vector<float>& b = buf[slot];
  if (static_cast<int64_t>(b.size()) < n) b.resize(static_cast<size_t>(n));
  return b.data();
}
// rows × cols of a reduced-type matrix with rows ld apart, as contiguous float32 in slot.
float* to_float_matrix(int slot, DType dt, const void* src, int64_t rows, int64_t cols,
                       int64_t ld) {
  float* out = scratch(slot, rows * cols);
  const auto* s = static_cast<const uint16_t*>(src);
  if (ld == cols) {
    convert::to_float(dt, out, s, rows * cols);
  } else {
    for (int64_t r = 0; r < rows; ++r) convert::to_float(dt, out + r * cols, s + r * ld, cols);
  }
  return out;
}
}  // namespace

void gemm_reduced_fallback(const ReducedGemm& g) {
  const float* a = to_float_matrix(0, g.ab, g.A, g.ta ? g.K : g.M, g.ta ? g.M : g.K, g.lda);
  const float* b = to_float_matrix(1, g.ab, g.B, g.tb ? g.N : g.K, g.tb ? g.K : g.N, g.ldb);
  const int64_t lda = g.ta ? g.M : g.K, ldb = g.tb ? g.K : g.N;
  if (g.c == kFloat32) {  // the caller's float32 buffer (accumulate, never a bias)
    gemm<float>(g.ta, g.tb, g.M, g.N, g.K, 1.0f, a, lda, b, ldb, g.accumulate ? 1.0f : 0.0f,
                static_cast<float*>(g.C), g.ldc);
    return;
  }
  // The float32 product (over the bias or the old C), rounded once into C.
  float* c = g.accumulate ? to_float_matrix(2, g.c, g.C, g.M, g.N, g.ldc) : scratch(2, g.M * g.N);
  if (g.bias) {
    convert::to_float(g.ab, c, g.bias, g.N);
    for (int64_t r = 1; r < g.M; ++r) std::memcpy(c + r * g.N, c, g.N * sizeof(float));
  }
  gemm<float>(g.ta, g.tb, g.M, g.N, g.K, 1.0f, a, lda, b, ldb,
              (g.accumulate || g.bias) ? 1.0f : 0.0f, c, g.N);
  auto* out = static_cast<uint16_t*>(g.C);
  if (g.ldc == g.N) return convert::from_float(g.c, out, c, g.M * g.N);
  for (int64_t r = 0; r < g.M; ++r) convert::from_float(g.c, out + r * g.ldc, c + r * g.N, g.N);
}

void gemm_reduced(const ReducedGemm& g, const char* op) {
  if (gemm::path(g.ab) == gemm::Path::Fallback) return gemm_reduced_fallback(g);
  std::string why;
  if (gemm_reduced_onednn(g, &why)) return;
  // Chosen, not forced: a layout oneDNN refuses takes the fallback.
  if (gemm::forced() < 0) return gemm_reduced_fallback(g);
  throw Error(fmt::format(
      "{}: the {} GEMM (M {}, N {}, K {}) is forced onto oneDNN (TG_GEMM_BF16=onednn or "
      "gemm::set_path), but {}",
      op, dtype_name(g.ab), g.M, g.N, g.K, why));
}

}  // namespace cpu
}  // namespace tg
