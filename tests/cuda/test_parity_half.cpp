// tests/cuda/test_parity_half.cpp — the device's bfloat16 / float16 conversions against the CPU's,
// bit for bit: cast between every pair of dtypes (float64, float32, bfloat16, float16, int64, bool)
// at the special values (±0, ±inf, NaN, rounding ties, float16 subnormals and overflow, float32
// subnormals, values past the float32 range), and fill. The op families in the reduced types are
// rows of the parity tables (test_parity_ops.cpp, test_parity_attention.cpp). Deliberately not
// here: speed (the emulator says nothing about it).
#include "tests/cuda/parity_harness.hpp"

#include <cstring>
#include <limits>

using namespace tg;
using tgt::gpu;

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();

// The values every cast starts from, as float64 (exact), repeated to 70 elements.
std::vector<double> special_values(bool to_integer) {
  std::vector<double> v = {0.0, -0.0, 1.0, -1.0, 2.5, -2.75, 1e-3, 123456.789, 7.0, -13.0};
  if (!to_integer) {
    const double more[] = {
        kInf,
        -kInf,
        std::nan(""),
        1.0 + std::ldexp(1.0, -8),      // a bfloat16 tie: to 1 (even)
        1.0 + 3 * std::ldexp(1.0, -8),  // a bfloat16 tie: up (even)
        1.0 + std::ldexp(1.0, -11),     // a float16 tie: to 1
        std::ldexp(1.0, -24),           // the smallest float16 subnormal
        3 * std::ldexp(1.0, -25),       // a float16 subnormal tie
        std::ldexp(1.0, -26),           // below half the smallest: float16 0
        65504.0,                        // float16's largest
        65519.0,                        // rounds to 65504
        65520.0,                        // rounds to float16 inf
        1e-40,                          // a float32 subnormal (bfloat16 keeps it)
        3.3895313892515355e38,          // bfloat16's largest
        3.4e38,                         // past bfloat16's largest: inf
        1e300,                          // past float32: inf everywhere below float64
        1.0 + std::ldexp(1.0, -30),     // float64 -> reduced goes through float32 (like c10)
    };
    v.insert(v.end(), std::begin(more), std::end(more));
  }
  std::vector<double> out(70);
  for (size_t i = 0; i < out.size(); ++i) out[i] = v[i % v.size()];
  return out;
}

// got (from the device) and want (the CPU) hold the same bits, NaN matching any NaN.
void check_same_bits(const std::string& what, const Tensor& got, const Tensor& want) {
  INFO(what);
  REQUIRE(got.dtype() == want.dtype());
  REQUIRE(got.numel() == want.numel());
  const Tensor g = got.cpu().contiguous(), w = want.contiguous();
  const size_t es = dtype_size(w.dtype());
  const auto* pg = static_cast<const unsigned char*>(g.data_ptr());
  const auto* pw = static_cast<const unsigned char*>(w.data_ptr());
  const bool fl = is_floating(w.dtype());
  const std::vector<double> a = fl ? g.to_vector<double>() : std::vector<double>(),
                            b = fl ? w.to_vector<double>() : std::vector<double>();
  int64_t bad = 0;
  std::string first;
  for (int64_t i = 0; i < w.numel(); ++i) {
    if (fl && std::isnan(a[i]) && std::isnan(b[i])) continue;
    if (std::memcmp(pg + i * es, pw + i * es, es) != 0) {
      if (bad < 5)
        first += fmt::format("\n  [{}] got {} want {}", i, g.to_vector<double>()[i],
                             w.to_vector<double>()[i]);
      ++bad;
    }
  }
  INFO(fmt::format("{} of {} elements differ{}", bad, w.numel(), first));
  CHECK(bad == 0);
}

const DType kAll[] = {kFloat64, kFloat32, kBFloat16, kFloat16, kInt64, kBool};
}  // namespace

TEST_CASE("cuda parity: cast between every pair of dtypes equals the CPU bit for bit") {
  for (DType from : kAll) {
    for (DType to : kAll) {
      // NaN, inf and values past int64 have no defined integer: integer targets start finite
      const bool to_integer = !is_floating(to);
      const Tensor src = tensor(special_values(to_integer), {70}).to(from);
      const Tensor want = src.to(to), got = src.to(gpu()).to(to);
      check_same_bits(fmt::format("{} -> {}", dtype_name(from), dtype_name(to)), got, want);
    }
  }
}

TEST_CASE("cuda parity: fill in bfloat16 and float16 rounds like the CPU") {
  const double values[] = {
      0.1,          -0.0,  1.0 + std::ldexp(1.0, -8), 65519.0, 65520.0, 1e10, 1e-40, -kInf,
      std::nan(""), 3.4e38};
  for (DType dt : {kBFloat16, kFloat16}) {
    for (double v : values) {
      check_same_bits(fmt::format("full({}) {}", v, dtype_name(dt)), full({70}, v, dt, gpu()),
                      full({70}, v, dt));
    }
    check_same_bits("zeros", zeros({5, 3}, dt, gpu()), zeros({5, 3}, dt));
    check_same_bits("ones", ones({5, 3}, dt, gpu()), ones({5, 3}, dt));
  }
}

TEST_CASE("cuda parity: bfloat16 and float16 data movement is exact") {
  for (DType dt : {kBFloat16, kFloat16}) {
    manual_seed(7);
    const Tensor x = randn({6, 5, 4}, kFloat32).to(dt);
    const Tensor xg = x.to(gpu());
    const Tensor idx = tensor(std::vector<int64_t>{3, 0, 3, 5});
    check_same_bits("transpose", transpose(xg, 0, 2).contiguous(), transpose(x, 0, 2).contiguous());
    check_same_bits("permute", permute(xg, {1, 2, 0}).contiguous(),
                    permute(x, {1, 2, 0}).contiguous());
    check_same_bits("narrow", narrow(xg, 1, 1, 3).contiguous(), narrow(x, 1, 1, 3).contiguous());
    check_same_bits("cat", cat({xg, xg}, 2), cat({x, x}, 2));
    check_same_bits("index_select", index_select(xg, 0, idx.to(gpu())), index_select(x, 0, idx));
    check_same_bits("where", where(gt(xg, 0.0), xg, neg(xg)), where(gt(x, 0.0), x, neg(x)));
  }
}
