// tests/autograd/test_half.cpp — the bfloat16 and float16 dtypes: the one conversion path
// (autograd/convert.hpp) against PyTorch 1.13's .to(torch.bfloat16) / .half() / .float() on every
// special value, rounding tie and subnormal (tests/fixtures/half, tools/make_half_fixtures.py), on
// every path this machine runs, at every alignment and tail length of the vector bodies; and the
// dtype vocabulary (names, sizes, finfo, promotion, printing, creation, .to(), npy).
#include "fixtures.hpp"
#include "helpers.hpp"

#include "autograd/convert.hpp"
#include "autograd/io.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

using namespace tg;
using tg::convert::Path;

namespace {
std::vector<Path> paths_here() {
  std::vector<Path> ps;
  for (Path p : {Path::Scalar, Path::Avx2, Path::Avx512Bf16})
    if (convert::path_supported(p)) ps.push_back(p);
  return ps;
}
struct PathScope {  // forces a path for one section, then the best again
  explicit PathScope(Path p) { REQUIRE(convert::set_path(p)); }
  ~PathScope() { convert::reset_path(); }
};
bool bits_nan(uint16_t h, DType t) {
  return t == kBFloat16 ? std::isnan(bf16_to_float(h)) : std::isnan(f16_to_float(h));
}
// Converts x[off, off + n) and compares with PyTorch's bits (NaN as NaN).
void check_forward(DType t, const std::vector<float>& x, const std::vector<int64_t>& want,
                   size_t off, size_t n) {
  std::vector<uint16_t> got(n + 1, 0xdead);
  convert::from_float(t, got.data(), x.data() + off, static_cast<int64_t>(n));
  REQUIRE(got[n] == 0xdead);  // nothing written past the end
  for (size_t i = 0; i < n; ++i) {
    const auto w = static_cast<uint16_t>(want[off + i]);
    if (bits_nan(w, t)) {
      INFO(dtype_name(t) << " x[" << off + i << "] NaN gives " << got[i]);
      REQUIRE(bits_nan(got[i], t));
    } else if (got[i] != w) {
      uint32_t u;
      std::memcpy(&u, &x[off + i], 4);
      FAIL(fmt::format("{} path {}: float32 bits {:08x} -> {:04x}, PyTorch {:04x}", dtype_name(t),
                       convert::path_name(convert::path()), u, got[i], w));
    }
  }
}
}  // namespace

TEST_CASE("half: float32 to bfloat16 and float16 rounds like PyTorch on every path and tail") {
  tgt::Fixture f("half/convert");
  const std::vector<float> x = f.tensor("x").to_vector<float>();
  const std::vector<int64_t> bf = f.tensor("bf16_bits").to_vector<int64_t>();
  const std::vector<int64_t> hf = f.tensor("f16_bits").to_vector<int64_t>();
  REQUIRE(x.size() > 3000);
  for (Path p : paths_here()) {
    PathScope scope(p);
    INFO("path " << convert::path_name(p));
    for (DType t : {kBFloat16, kFloat16}) {
      const auto& want = t == kBFloat16 ? bf : hf;
      check_forward(t, x, want, 0, x.size());  // the whole vector body
      for (size_t n = 0; n <= 40; ++n)         // every tail, at every alignment of a vector
        for (size_t off = 0; off < 17; ++off) check_forward(t, x, want, off * 97 % 3000, n);
    }
  }
}

TEST_CASE("half: bfloat16 and float16 to float32 are exact like PyTorch on every path and tail") {
  tgt::Fixture f("half/convert");
  std::vector<uint16_t> h;
  for (int64_t v : f.tensor("h_bits").to_vector<int64_t>()) h.push_back(static_cast<uint16_t>(v));
  for (Path p : paths_here()) {
    PathScope scope(p);
    INFO("path " << convert::path_name(p));
    for (DType t : {kBFloat16, kFloat16}) {
      const std::vector<float> want =
          f.tensor(t == kBFloat16 ? "from_bf16" : "from_f16").to_vector<float>();
      for (size_t n : {h.size(), size_t{1}, size_t{7}, size_t{8}, size_t{15}, size_t{16},
                       size_t{17}, size_t{33}}) {
        for (size_t off : {size_t{0}, size_t{3}}) {
          if (off + n > h.size()) continue;
          std::vector<float> got(n + 1, 12345.f);
          convert::to_float(t, got.data(), h.data() + off, static_cast<int64_t>(n));
          REQUIRE(got[n] == 12345.f);
          for (size_t i = 0; i < n; ++i) {
            INFO(dtype_name(t) << " bits " << h[off + i]);
            if (std::isnan(want[off + i]))
              REQUIRE(std::isnan(got[i]));
            else
              REQUIRE(std::memcmp(&got[i], &want[off + i], 4) == 0);
          }
        }
      }
    }
  }
}

TEST_CASE(
    "half: the vector paths give the scalar path's bits on 2^20 random floats and all 2^16 "
    "patterns") {
  std::vector<float> x(1 << 20);
  uint64_t s = 88172645463325252ull;
  for (float& v : x) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    const auto u = static_cast<uint32_t>(s);
    std::memcpy(&v, &u, 4);
  }
  std::vector<uint16_t> all(1 << 16);
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
  for (DType t : {kBFloat16, kFloat16}) {
    std::vector<uint16_t> ref(x.size());
    std::vector<float> back_ref(all.size());
    {
      PathScope scope(Path::Scalar);
      convert::from_float(t, ref.data(), x.data(), static_cast<int64_t>(x.size()));
      convert::to_float(t, back_ref.data(), all.data(), static_cast<int64_t>(all.size()));
    }
    for (Path p : paths_here()) {
      PathScope scope(p);
      INFO(dtype_name(t) << " path " << convert::path_name(p));
      std::vector<uint16_t> got(x.size());
      convert::from_float(t, got.data(), x.data(), static_cast<int64_t>(x.size()));
      REQUIRE(got == ref);
      std::vector<float> back(all.size());
      convert::to_float(t, back.data(), all.data(), static_cast<int64_t>(all.size()));
      REQUIRE(std::memcmp(back.data(), back_ref.data(), back.size() * 4) == 0);
    }
  }
}

TEST_CASE("half: the path is chosen from the CPU and can be forced") {
  const Path best = convert::path();
  REQUIRE(convert::path_supported(Path::Scalar));
  REQUIRE(convert::set_path(Path::Scalar));
  REQUIRE(convert::path() == Path::Scalar);
  convert::reset_path();
  REQUIRE(convert::path() == best);
  REQUIRE(std::string(convert::path_name(Path::Avx512Bf16)) == "avx512_bf16");
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && !std::getenv("TG_CONVERT"))
    REQUIRE(best == Path::Avx512Bf16);
}

TEST_CASE("half: dtype vocabulary, finfo and PyTorch's type promotion") {
  REQUIRE(std::string(dtype_name(kBFloat16)) == "bfloat16");
  REQUIRE(std::string(dtype_name(kFloat16)) == "float16");
  REQUIRE(dtype_size(kBFloat16) == 2);
  REQUIRE(dtype_size(kFloat16) == 2);
  REQUIRE(is_floating(kBFloat16));
  REQUIRE(is_reduced(kFloat16));
  REQUIRE_FALSE(is_reduced(kFloat32));
  // torch.finfo(torch.bfloat16 / float16) in PyTorch 1.13.
  REQUIRE(finfo(kBFloat16).eps == 0.0078125);
  REQUIRE(finfo(kBFloat16).max == 3.3895313892515355e+38);
  REQUIRE(finfo(kBFloat16).tiny == 1.1754943508222875e-38);
  REQUIRE(finfo(kBFloat16).resolution == 0.01);
  REQUIRE(finfo(kFloat16).eps == 0.0009765625);
  REQUIRE(finfo(kFloat16).max == 65504);
  REQUIRE(finfo(kFloat16).min == -65504);
  REQUIRE(finfo(kFloat16).tiny == 6.103515625e-05);
  REQUIRE(finfo(kFloat32).eps == 1.1920928955078125e-07);
  REQUIRE(finfo(kFloat16).bits == 16);
  REQUIRE_ERROR(finfo(kInt64), "finfo: dtype int64 is not a floating type");
  // torch.promote_types
  REQUIRE(promote_types(kBFloat16, kFloat32) == kFloat32);
  REQUIRE(promote_types(kFloat16, kBFloat16) == kFloat32);
  REQUIRE(promote_types(kFloat16, kFloat64) == kFloat64);
  REQUIRE(promote_types(kInt64, kBFloat16) == kBFloat16);
  REQUIRE(promote_types(kBool, kFloat16) == kFloat16);
  REQUIRE(promote_types(kFloat16, kFloat16) == kFloat16);
  REQUIRE(promote_types(kBool, kInt64) == kInt64);
}

TEST_CASE("half: creation, .to(), item and printing in bfloat16 and float16") {
  Tensor z = zeros({2, 3}, kBFloat16);
  REQUIRE(z.dtype() == kBFloat16);
  REQUIRE(z.to(kFloat32).to_vector<float>() == std::vector<float>(6, 0.f));
  // full rounds its value once: 0.1 -> bfloat16 0.10009765625, float16 0.0999755859375
  REQUIRE(full({3}, 0.1, kBFloat16).to(kFloat64).to_vector<double>() ==
          std::vector<double>(3, 0.10009765625));
  REQUIRE(full({3}, 0.1, kFloat16).to(kFloat64).to_vector<double>() ==
          std::vector<double>(3, 0.0999755859375));
  REQUIRE(full({1}, 70000, kFloat16).item<double>() == INFINITY);  // past float16's max
  REQUIRE(ones({2}, kFloat16).data<float16>()[1].bits == 0x3c00);
  REQUIRE(arange(0, 5, 1, kBFloat16).to(kInt64).to_vector<int64_t>() ==
          std::vector<int64_t>{0, 1, 2, 3, 4});
  REQUIRE(eye(2, kFloat16).to(kFloat32).to_vector<float>() == std::vector<float>{1, 0, 0, 1});
  manual_seed(0);
  Tensor r = randn({1000}, kBFloat16);
  REQUIRE(r.dtype() == kBFloat16);
  const double m = r.to(kFloat64).mean().item<double>();
  REQUIRE(std::fabs(m) < 0.1);
  // .to(): float64 -> bfloat16 rounds through float32 (c10::BFloat16(float(x)), PyTorch's cast)
  Tensor d =
      tensor(std::vector<double>{1.00390625, 1.0039062500000002, -2.5, 1e-40, 3e38, 1e39}, {6});
  REQUIRE(d.to(kBFloat16).to(kFloat64).to_vector<double>() ==
          std::vector<double>{1, 1, -2.5, 9.183549615799121e-41, 3.00405527047391e+38, INFINITY});
  REQUIRE(d.to(kFloat16).to(kFloat64).to_vector<double>() ==
          std::vector<double>{1.00390625, 1.00390625, -2.5, 0, INFINITY, INFINITY});
  REQUIRE(d.to(kBFloat16).to(kFloat16).to(kFloat32).to_vector<float>()[2] == -2.5f);
  REQUIRE(
      tensor(std::vector<int64_t>{257, -3}, {2}).to(kBFloat16).to(kInt64).to_vector<int64_t>() ==
      std::vector<int64_t>{256, -3});
  REQUIRE(tensor(std::vector<double>{0, -0.5, 2}, {3}).to(kFloat16).to(kBool).to_vector<bool>() ==
          std::vector<bool>{false, true, true});
  REQUIRE(full({}, 1.5, kFloat16).item<double>() == 1.5);
  REQUIRE(full({2}, 1.5, kBFloat16).str() == "tensor([1.5000, 1.5000], shape=(2), dtype=bfloat16)");
  // A view of a reduced tensor copies as 2-byte elements.
  Tensor m2 = arange(0, 6, 1, kFloat16).reshape({2, 3});
  REQUIRE(m2.transpose(0, 1).contiguous().to(kFloat32).to_vector<float>() ==
          std::vector<float>{0, 3, 1, 4, 2, 5});
}

TEST_CASE(
    "half: .to() between float32 and bfloat16 is differentiable, the gradient in the input's "
    "dtype") {
  Tensor x = tensor(std::vector<float>{1.5f, -2.25f, 3.0f}, {3}).requires_grad_();
  Tensor y = x.to(kBFloat16);
  REQUIRE(y.dtype() == kBFloat16);
  y.to(kFloat32).sum().backward();
  REQUIRE(x.grad().dtype() == kFloat32);
  REQUIRE(x.grad().to_vector<float>() == std::vector<float>{1, 1, 1});
}

TEST_CASE("half: float16 round-trips through .npy, bfloat16 is refused by name") {
  const std::string path = "tg_test_half.npy";
  Tensor h = tensor(std::vector<double>{0.5, -0.0, 65504, 6e-8, 1.0 / 3}, {5}).to(kFloat16);
  save_npy(path, h);
  Tensor back = load_npy(path);
  REQUIRE(back.dtype() == kFloat16);
  REQUIRE(back.shape() == Shape{5});
  for (int i = 0; i < 5; ++i) REQUIRE(back.data<float16>()[i].bits == h.data<float16>()[i].bits);
  save_npy(path, h.reshape({5, 1}));
  REQUIRE(load_npy(path).shape() == Shape{5, 1});
  REQUIRE_ERROR(save_npy(path, h.to(kBFloat16)), ".npy has no bfloat16 type");
  std::remove(path.c_str());
}
