// tests/ops/test_half_matmul.cpp — matmul, bmm and linear on bfloat16 and float16, forward and
// backward, on every GEMM path this machine runs (ops/matmul/reduced_gemm.hpp: oneDNN, the
// float32 fallback), against PyTorch 1.13 (tools/make_half_matmul_fixtures.py).
// Tolerance: 1 ulp of the dtype at the reference value. Both paths sum the products in float32
// (a different order in oneDNN's blocked kernels than in OpenBLAS's) and round once, so a result
// differs from the correctly rounded one (once_*: the float64 product rounded once) only where
// the float32 sum's error crosses a rounding boundary: at most one ulp.
// Where PyTorch 1.13 rounds more than once (bfloat16 GEMMs with m·n·k <= 4096 accumulate in
// bfloat16; a broadcast operand's gradient is summed over its batches in bfloat16) we compare to
// once_* and check PyTorch's own result is further off; elsewhere also to PyTorch's result.
// float16: PyTorch 1.13 has no CPU float16 matmul, so once_* is the reference.
#include "fixtures.hpp"
#include "helpers.hpp"
#include "ops/matmul/reduced_gemm.hpp"

#include <cstdlib>
#include <map>
#include <set>

using namespace tg;

namespace {
struct PathScope {
  explicit PathScope(gemm::Path p) { gemm::set_path(p); }
  ~PathScope() { gemm::reset_path(); }
};

// The paths this build and CPU run for dt.
std::vector<gemm::Path> paths(DType dt) {
  std::vector<gemm::Path> out{gemm::Path::Fallback};
  if (gemm::onednn_runs(dt)) out.push_back(gemm::Path::OneDnn);
  return out;
}

// Largest |x - ref| in ulps of dt at each ref value (float16's subnormal spacing at the bottom).
double max_ulps(const Tensor& x, const Tensor& ref, DType dt) {
  const std::vector<float> a = x.to(kFloat32).to_vector<float>();
  const std::vector<float> b = ref.to(kFloat32).to_vector<float>();
  REQUIRE(a.size() == b.size());
  const int mant = dt == kBFloat16 ? 7 : 10;
  const double tiny = dt == kBFloat16 ? std::ldexp(1.0, -133) : std::ldexp(1.0, -24);
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double r = b[i];
    const double ulp = r == 0 ? tiny : std::max(tiny, std::ldexp(1.0, std::ilogb(r) - mant));
    worst = std::max(worst, std::abs(double(a[i]) - r) / ulp);
  }
  return worst;
}

// The case's op on its inputs in dtype dt: {out, d<arg>...} in the fixture's names.
std::map<std::string, Tensor> run_case(const tgt::Fixture& f, DType dt) {
  const bool lin = f.meta("op") == "linear";
  const std::vector<std::string> names =
      lin ? std::vector<std::string>{"x", "w", "bias"} : std::vector<std::string>{"a", "b"};
  std::vector<Tensor> in;
  for (const auto& n : names) in.push_back(f.tensor(n).to(dt).requires_grad_());
  Tensor out = lin                     ? linear(in[0], in[1], in[2])
               : f.meta("op") == "bmm" ? bmm(in[0], in[1])
                                       : matmul(in[0], in[1]);
  REQUIRE(out.dtype() == dt);
  out.backward(f.tensor("dout").to(dt));
  std::map<std::string, Tensor> r{{"out", out}};
  for (size_t i = 0; i < names.size(); ++i) {
    REQUIRE(in[i].grad().dtype() == dt);
    r["d" + names[i]] = in[i].grad();
  }
  return r;
}

// Where PyTorch 1.13 rounds more than once (see the file head), measured on these fixtures.
const std::set<std::string> kTorchRoundsTwice = {"mm_small/out",   "mm_small/db", "vec/out",
                                                 "bcast/da",       "bcast/db",    "linear_small/dx",
                                                 "linear_small/dw"};
}  // namespace

TEST_CASE("half matmul: bf16/f16 matmul, bmm, linear and backward against PyTorch 1.13") {
  for (const std::string& id : tgt::fixture_index("half_matmul")) {
    const tgt::Fixture f("half_matmul/" + id);
    const DType dt = f.meta("dtype") == "bf16" ? kBFloat16 : kFloat16;
    const std::string name = id.substr(0, id.rfind('_'));
    for (gemm::Path p : paths(dt)) {
      PathScope scope(p);
      for (const auto& [k, got] : run_case(f, dt)) {
        INFO(id << " " << k << " path " << gemm::path_name(p) << " shape "
                << shape_str(got.shape()));
        const double once = max_ulps(got, f.tensor("once_" + k), dt);
        INFO("ulps from the float64 product rounded once: " << once);
        CHECK(once <= 1.0);
        if (!f.has("torch_" + k)) continue;  // float16: no PyTorch CPU kernel
        const double torch = max_ulps(got, f.tensor("torch_" + k), dt);
        INFO("ulps from PyTorch's bfloat16 result: " << torch);
        if (kTorchRoundsTwice.count(name + "/" + k)) {
          // We do better: PyTorch's result is further from the once-rounded one than ours.
          CHECK(max_ulps(f.tensor("torch_" + k), f.tensor("once_" + k), dt) > once + 1.0);
        } else {
          CHECK(torch <= 1.0);
        }
      }
    }
  }
}

TEST_CASE("half matmul: larger products round the float32 product once on every path") {
  manual_seed(3);
  // K past oneDNN's and OpenBLAS's blocking; a transposed rhs (stored_transposed) and a
  // broadcast batch.
  const Tensor a32 = randn({2, 70, 300}).to(kBFloat16).to(kFloat32);
  const Tensor b32 = randn({90, 300}).to(kBFloat16).to(kFloat32);
  const Tensor ref = matmul(a32.to(kFloat64), b32.to(kFloat64).t());
  for (DType dt : {kBFloat16, kFloat16}) {
    for (gemm::Path p : paths(dt)) {
      PathScope scope(p);
      INFO(dtype_name(dt) << " path " << gemm::path_name(p));
      const Tensor a = a32.to(dt), b = b32.to(dt);
      const Tensor y = matmul(a, b.t());
      CHECK(max_ulps(y, ref.to(dt), dt) <= 1.0);
      // The transposed view goes to the GEMM as it lies: the same bits as a copied operand.
      const Tensor yc = matmul(a, b.t().contiguous());
      CHECK(y.to(kFloat32).to_vector<float>() == yc.to(kFloat32).to_vector<float>());
    }
  }
}

TEST_CASE("half matmul: oneDNN and the fallback agree within one ulp") {
  if (!gemm::onednn_runs(kBFloat16)) return;  // nothing to compare on this build or CPU
  manual_seed(4);
  const Tensor x = randn({64, 200}).to(kBFloat16), w = randn({96, 200}).to(kBFloat16);
  const Tensor bias = randn({96}).to(kBFloat16);
  Tensor y[2];
  int i = 0;
  for (gemm::Path p : {gemm::Path::OneDnn, gemm::Path::Fallback}) {
    PathScope scope(p);
    y[i++] = linear(x, w, bias);
  }
  CHECK(max_ulps(y[0], y[1], kBFloat16) <= 1.0);
}

TEST_CASE("half matmul: the path is forced by TG_GEMM_BF16 or set_path, with clear errors") {
  gemm::reset_path();
  ::setenv("TG_GEMM_BF16", "fallback", 1);
  gemm::reset_path();
  CHECK(gemm::path(kBFloat16) == gemm::Path::Fallback);
  CHECK(gemm::path(kFloat16) == gemm::Path::Fallback);
  ::setenv("TG_GEMM_BF16", "fast", 1);
  gemm::reset_path();
  CHECK_THROWS_WITH(gemm::path(kBFloat16),
                    Catch::Contains("TG_GEMM_BF16=fast") && Catch::Contains("onednn or fallback"));
  ::unsetenv("TG_GEMM_BF16");
  gemm::reset_path();
  // Unforced: oneDNN exactly where it runs.
  for (DType dt : {kBFloat16, kFloat16})
    CHECK((gemm::path(dt) == gemm::Path::OneDnn) == gemm::onednn_runs(dt));
  if (!gemm::onednn_built()) {
    CHECK_THROWS_WITH(gemm::set_path(gemm::Path::OneDnn), Catch::Contains("libdnnl-dev"));
    return;
  }
  std::string impl;
  const bool f16 = gemm::onednn_runs(kFloat16, &impl);
  if (!f16) {  // forced onto oneDNN where it has no float16 matmul: an error naming the op
    INFO(impl);
    PathScope scope(gemm::Path::OneDnn);
    const Tensor a = ones({4, 8}, kFloat16);
    CHECK_THROWS_WITH(matmul(a, a.t()), Catch::Contains("matmul") && Catch::Contains("float16") &&
                                            Catch::Contains("oneDNN"));
  }
}

TEST_CASE(
    "half matmul: float32 with one reduced operand is float32 (weight-only), the rest is refused "
    "naming both") {
  const Tensor a = ones({2, 3}, kBFloat16), b = ones({3, 4}, kFloat32);
  // PyTorch refuses these pairs ("expected scalar type"); tapegrad promotes them to float32, as
  // its binary ops do: float32 arithmetic on the reduced operand (tests/ops/test_matmul_mixed.cpp).
  const Tensor ab = matmul(a, b);
  CHECK(ab.dtype() == kFloat32);
  CHECK(ab.to_vector<float>() == std::vector<float>(8, 3.0f));
  const Tensor l = linear(b.t(), ones({5, 3}, kFloat16));
  CHECK(l.dtype() == kFloat32);
  CHECK(l.to_vector<float>() == std::vector<float>(20, 3.0f));
  CHECK_THROWS_WITH(
      matmul(ones({2, 3}, kFloat64), ones({3, 4}, kBFloat16)),
      Catch::Contains("matmul") && Catch::Contains("float64") && Catch::Contains("bfloat16"));
  CHECK_THROWS_WITH(
      bmm(ones({1, 2, 3}, kFloat16), ones({1, 3, 2}, kBFloat16)),
      Catch::Contains("bmm") && Catch::Contains("float16") && Catch::Contains("bfloat16"));
}

TEST_CASE("half matmul: einsum contractions lower to the same bf16/f16 GEMMs") {
  manual_seed(6);
  for (DType dt : {kBFloat16, kFloat16}) {
    INFO(dtype_name(dt));
    const Tensor a = randn({3, 5, 7}).to(dt), b = randn({3, 7, 4}).to(dt);
    const Tensor e = einsum("bij,bjk->bik", {a, b});
    REQUIRE(e.dtype() == dt);
    CHECK(e.to(kFloat32).to_vector<float>() == bmm(a, b).to(kFloat32).to_vector<float>());
    const Tensor m = einsum("ij,kj->ik", {a.select(0, 1), b.select(0, 2).t()});
    CHECK(m.to(kFloat32).to_vector<float>() ==
          matmul(a.select(0, 1), b.select(0, 2)).to(kFloat32).to_vector<float>());
  }
}

TEST_CASE("half matmul: CUDA bf16/f16 GEMMs (cublasGemmEx, float32 compute) match the CPU") {
  if (!cuda_is_available()) return;  // no device: nothing to run (the emulator build runs it)
  const Device dev = cuda_device(0);
  manual_seed(5);
  for (DType dt : {kBFloat16, kFloat16}) {
    // 2-D with odd sizes, and bmm: forward and both gradients. cuBLAS sums in float32 in its
    // own order and rounds once, like the CPU paths: 1 ulp (the file head).
    const std::vector<std::pair<Shape, Shape>> shapes = {{{33, 70}, {70, 41}},
                                                         {{3, 17, 40}, {3, 40, 23}}};
    for (const auto& [sa, sb] : shapes) {
      INFO(dtype_name(dt) << " lhs " << shape_str(sa) << " rhs " << shape_str(sb));
      const Tensor a = randn(sa).to(dt), b = randn(sb).to(dt);
      Tensor ac = a.clone().requires_grad_(), bc = b.clone().requires_grad_();
      Tensor ag = a.to(dev).requires_grad_(), bg = b.to(dev).requires_grad_();
      const Tensor yc = matmul(ac, bc), yg = matmul(ag, bg);
      REQUIRE(yg.dtype() == dt);
      const Tensor g = randn(yc.shape()).to(dt);
      yc.backward(g);
      yg.backward(g.to(dev));
      CHECK(max_ulps(yg.to(kCPU), yc, dt) <= 1.0);
      CHECK(max_ulps(ag.grad().to(kCPU), ac.grad(), dt) <= 1.0);
      CHECK(max_ulps(bg.grad().to(kCPU), bc.grad(), dt) <= 1.0);
    }
  }
}
