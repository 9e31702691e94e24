// tests/cuda/parity_harness.hpp — the GPU-vs-CPU check every parity case goes through.
// A case builds its inputs on the CPU (seeded) and maps input tensors to output tensors with ops.
// run_parity() computes the float64 CPU reference (from the inputs rounded to the device dtype,
// so both sides see the same numbers) and the device run in dtype dt, compares every output,
// then backpropagates the same random weighting of the outputs on both sides and compares the
// gradient of every floating input. On failure it prints the case, dtype, which tensor, its
// shape, the first differing elements and the max difference.
#pragma once

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "autograd/engine.hpp"
#include "autograd/tape.hpp"
#include "ops/attention/attention.hpp"
#include "ops/ops.hpp"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace tgt {

using Inputs = std::vector<tg::Tensor>;
using Fn = std::function<std::vector<tg::Tensor>(const Inputs&)>;

struct ParityCase {
  std::string name;
  std::function<Inputs()> inputs;  // CPU tensors; floating ones in any float dtype
  Fn fn;
  double tol32 = 2e-5;  // |got - want| <= tol·(1 + |want|), float32 on the device
  double tol64 = 1e-10;
  bool backward = true;
  // bfloat16 / float16 (run_parity_reduced): values below this magnitude are compared in ulps at
  // it. 0: every value in its own ulps. Set where an input's gradient sums contributions that
  // cancel (an input used twice, a broadcast operand, a chain of rounding ops): a one-ulp
  // difference of a contribution is then many ulps of a smaller sum.
  double half_floor = 0;
};

inline tg::Device gpu() { return tg::cuda_device(0); }

// |got - want| <= tol·(1 + |want|) elementwise (NaN matches NaN, inf matches the same inf).
inline void check_close(const std::string& what, const tg::Tensor& got, const tg::Tensor& want,
                        double tol) {
  INFO(what);
  REQUIRE(got.defined() == want.defined());
  if (!want.defined()) return;
  REQUIRE(tg::shape_str(got.shape()) == tg::shape_str(want.shape()));
  CHECK(got.device() == gpu());
  if (!tg::is_floating(want.dtype())) {
    CHECK(got.to_vector<int64_t>() == want.to_vector<int64_t>());
    return;
  }
  std::vector<double> a = got.to_vector<double>(), b = want.to_vector<double>();
  double worst = 0;
  int64_t bad = 0;
  std::string first;
  for (size_t i = 0; i < a.size(); ++i) {
    double err;
    if (std::isnan(b[i]) || std::isnan(a[i]))
      err = std::isnan(a[i]) && std::isnan(b[i]) ? 0 : INFINITY;
    else if (std::isinf(b[i]) || std::isinf(a[i]))
      err = a[i] == b[i] ? 0 : INFINITY;
    else
      err = std::fabs(a[i] - b[i]) / (1 + std::fabs(b[i]));
    if (err > tol) {
      if (bad < 5) first += fmt::format("\n  [{}] got {} want {}", i, a[i], b[i]);
      ++bad;
    }
    worst = std::max(worst, err);
  }
  INFO(fmt::format("shape {}: {} of {} elements off, max scaled diff {:.3g} (tol {:.1g}){}",
                   tg::shape_str(want.shape()), bad, a.size(), worst, tol, first));
  CHECK(bad == 0);
}

// The case's inputs (seeded) for the CPU (ref) and the device (dev): floating ones rounded to dt,
// the CPU's then held as ref_dt (float64 for the float64 reference; dt itself for reduced runs),
// both requiring grad when the case has a backward.
inline void make_inputs(const ParityCase& c, tg::DType dt, tg::DType ref_dt, Inputs& ref,
                        Inputs& dev) {
  tg::manual_seed(1234);
  Inputs xs = c.inputs();
  for (const tg::Tensor& x : xs) {
    if (tg::is_floating(x.dtype())) {
      tg::Tensor r = x.detach().to(dt).to(ref_dt).detach();
      tg::Tensor d = x.detach().to(dt).to(gpu()).detach();
      if (c.backward) {
        r.requires_grad_();
        d.requires_grad_();
      }
      ref.push_back(r);
      dev.push_back(d);
    } else {
      ref.push_back(x);
      dev.push_back(x.defined() ? x.to(gpu()) : x);
    }
  }
}

inline void run_parity(const ParityCase& c, tg::DType dt) {
  const double tol = dt == tg::kFloat32 ? c.tol32 : c.tol64;
  const std::string tag = fmt::format("{} [{}]", c.name, tg::dtype_name(dt));
  Inputs ref, dev;
  make_inputs(c, dt, tg::kFloat64, ref, dev);
  std::vector<tg::Tensor> want = c.fn(ref), got = c.fn(dev);
  REQUIRE(want.size() == got.size());
  for (size_t i = 0; i < want.size(); ++i)
    check_close(fmt::format("{}: output {}", tag, i), got[i], want[i], tol);
  if (!c.backward) return;
  tg::Tensor lr, ld;
  tg::manual_seed(99);
  for (size_t i = 0; i < want.size(); ++i) {
    if (!want[i].defined() || !want[i].requires_grad()) continue;
    tg::Tensor w = tg::randn(want[i].shape(), tg::kFloat64);
    tg::Tensor r = tg::sum(tg::mul(want[i], w));
    tg::Tensor d = tg::sum(tg::mul(got[i], w.to(dt).to(gpu())));
    lr = lr.defined() ? tg::add(lr, r) : r;
    ld = ld.defined() ? tg::add(ld, d) : d;
  }
  if (!lr.defined()) return;
  lr.backward();
  ld.backward();
  for (size_t i = 0; i < ref.size(); ++i) {
    if (!ref[i].requires_grad()) continue;
    check_close(fmt::format("{}: gradient of input {}", tag, i), dev[i].grad(), ref[i].grad(), tol);
  }
}

// ---- bfloat16 / float16: the device against the CPU in the same dtype ----
// The CPU is the spec (ops/core/cpu/reduced.hpp: a float32 body, rounded once); the device loads
// the reduced type as float, computes its float32 kernel (cuda/half.cuh, cuda/reduced.cuh) and
// rounds once. The two float32 results differ where the order of float accumulation differs
// (reductions, row statistics, GEMM tiles) or a formula is evaluated in double on one side and in
// float on the other; rounding those to 8 (bf16) or 11 (f16) significant bits then agrees to
// within one unit in the last place, the bound checked here.

// A reduced-type bit pattern as a position on the number line (one step per ulp, ±0 equal).
inline int64_t ulp_position(uint16_t b) {
  const int64_t mag = b & 0x7fff;
  return (b & 0x8000) ? -mag : mag;
}

// The spacing of dt's values (bfloat16: 8 significant bits, float16: 11) at magnitude v.
inline double ulp_at(tg::DType dt, double v) {
  const bool bf = dt == tg::kBFloat16;
  const int e = std::max(std::ilogb(std::max(v, 1e-300)), bf ? -126 : -14);
  return std::ldexp(1.0, e - (bf ? 7 : 10));
}

// got (device) and want (CPU), both of a reduced dtype: within max_ulps of each other (values
// below `floor` in ulps at floor), NaN where the other is NaN, an infinity where the other is the
// same infinity.
inline void check_ulps(const std::string& what, const tg::Tensor& got, const tg::Tensor& want,
                       int64_t max_ulps, double floor = 0) {
  INFO(what);
  REQUIRE(got.dtype() == want.dtype());
  const tg::Tensor g = got.cpu().contiguous(), w = want.contiguous();
  const auto* pg = static_cast<const uint16_t*>(g.data_ptr());
  const auto* pw = static_cast<const uint16_t*>(w.data_ptr());
  const std::vector<double> a = g.to_vector<double>(), b = w.to_vector<double>();
  int64_t bad = 0, worst = 0;
  std::string first;
  for (size_t i = 0; i < a.size(); ++i) {
    int64_t d;
    if (std::isnan(a[i]) || std::isnan(b[i]) || std::isinf(a[i]) || std::isinf(b[i]))
      d = (std::isnan(a[i]) && std::isnan(b[i])) || a[i] == b[i] ? 0 : INT64_MAX;
    else if (std::max(std::fabs(a[i]), std::fabs(b[i])) < floor)
      d = static_cast<int64_t>(std::ceil(std::fabs(a[i] - b[i]) / ulp_at(want.dtype(), floor)));
    else
      d = std::abs(ulp_position(pg[i]) - ulp_position(pw[i]));
    if (d > max_ulps) {
      if (bad < 5) first += fmt::format("\n  [{}] got {} want {} ({} ulps)", i, a[i], b[i], d);
      ++bad;
    }
    worst = std::max(worst, d);
  }
  INFO(fmt::format("shape {} {}: {} of {} elements off, max {} ulps (allowed {}){}",
                   tg::shape_str(want.shape()), tg::dtype_name(want.dtype()), bad, a.size(), worst,
                   max_ulps, first));
  CHECK(bad == 0);
}

// One output or gradient: reduced dtypes within max_ulps, float32 ones (float32 parameters'
// gradients, float64 statistics) within the case's float32 tolerance, integers exactly.
inline void check_reduced(const std::string& what, const tg::Tensor& got, const tg::Tensor& want,
                          const ParityCase& c, int64_t max_ulps) {
  REQUIRE(got.defined() == want.defined());
  if (!want.defined()) return;
  if (tg::is_reduced(want.dtype()))
    check_ulps(what, got, want, max_ulps, c.half_floor);
  else
    check_close(what, got, want, c.tol32);
}

// The case on the CPU and on the device, both with the floating inputs rounded to dt (bfloat16 or
// float16); outputs and the gradients of the same random weighting compared by check_reduced.
inline void run_parity_reduced(const ParityCase& c, tg::DType dt, int64_t max_ulps = 1) {
  const std::string tag = fmt::format("{} [{}]", c.name, tg::dtype_name(dt));
  Inputs ref, dev;
  make_inputs(c, dt, dt, ref, dev);
  std::vector<tg::Tensor> want = c.fn(ref), got = c.fn(dev);
  REQUIRE(want.size() == got.size());
  for (size_t i = 0; i < want.size(); ++i)
    check_reduced(fmt::format("{}: output {}", tag, i), got[i], want[i], c, max_ulps);
  if (!c.backward) return;
  tg::manual_seed(99);
  bool any = false;
  std::vector<tg::Tensor> outs_r, outs_d, grads_r, grads_d;
  for (size_t i = 0; i < want.size(); ++i) {
    if (!want[i].defined() || !want[i].requires_grad()) continue;
    tg::Tensor w = tg::randn(want[i].shape(), tg::kFloat32).to(want[i].dtype());
    outs_r.push_back(want[i]);
    outs_d.push_back(got[i]);
    grads_r.push_back(w);
    grads_d.push_back(w.to(gpu()));
    any = true;
  }
  if (!any) return;
  tg::backward(outs_r, grads_r);
  tg::backward(outs_d, grads_d);
  for (size_t i = 0; i < ref.size(); ++i) {
    if (!ref[i].requires_grad()) continue;
    check_reduced(fmt::format("{}: gradient of input {}", tag, i), dev[i].grad(), ref[i].grad(), c,
                  max_ulps);
  }
}

// run_parity for float32 / float64, run_parity_reduced for bfloat16 / float16.
inline void run_parity_any(const ParityCase& c, tg::DType dt) {
  if (tg::is_reduced(dt))
    run_parity_reduced(c, dt);
  else
    run_parity(c, dt);
}

}  // namespace tgt
