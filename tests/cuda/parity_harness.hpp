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

#include "autograd/tape.hpp"
#include "ops/attention/attention.hpp"
#include "ops/ops.hpp"

#include <cmath>
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

inline void run_parity(const ParityCase& c, tg::DType dt) {
  const double tol = dt == tg::kFloat32 ? c.tol32 : c.tol64;
  const std::string tag = fmt::format("{} [{}]", c.name, tg::dtype_name(dt));
  tg::manual_seed(1234);
  Inputs xs = c.inputs();
  Inputs ref, dev;
  for (const tg::Tensor& x : xs) {
    if (tg::is_floating(x.dtype())) {
      tg::Tensor r = x.detach().to(dt).to(tg::kFloat64).detach();
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

}  // namespace tgt
