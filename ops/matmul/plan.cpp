// ops/matmul/plan.cpp — make_plan, the layout tests behind it and the recorded (create_graph)
// gradients of a product (see plan.hpp).
#include "ops/matmul/plan.hpp"

#include "ops/core/detail.hpp"
#include "ops/ops.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <climits>

namespace tg::matmul_plan {
using namespace detail;

namespace {
// Element offsets of an operand's matrices over the broadcast batch shape `out` (row-major).
std::vector<int64_t> batch_offsets(const Shape& in, const Shape& out, int64_t mat) {
  Shape st = broadcast_strides(in, out);
  std::vector<int64_t> offs(static_cast<size_t>(shape_numel(out)));
  std::vector<int64_t> idx(out.size(), 0);
  int64_t o = 0;
  for (size_t i = 0; i < offs.size(); ++i) {
    offs[i] = o * mat;
    for (size_t d = out.size(); d-- > 0;) {
      if (++idx[d] < out[d]) {
        o += st[d];
        break;
      }
      o -= st[d] * (out[d] - 1);
      idx[d] = 0;
    }
  }
  return offs;
}
}  // namespace

Plan make_plan(const char* op, const Tensor& a, const Tensor& b, bool ta, bool tb) {
  const Shape &sa = a.shape(), &sb = b.shape();
  if (sa.empty() || sb.empty())
    throw Error(
        fmt::format("{}: lhs {} and rhs {}: both operands need at least 1 dim, got a 0-dim "
                    "tensor (use mul for scalars)",
                    op, shape_str(sa), shape_str(sb)));
  const size_t na = sa.size(), nb = sb.size();
  const int64_t Ka = sa[na - 1], Kb = nb == 1 ? sb[0] : sb[nb - 2];
  if (Ka != Kb)
    throw Error(fmt::format("{}: lhs {} and rhs {}: inner dims {} != {}", op, shape_str(sa),
                            shape_str(sb), Ka, Kb));
  Plan p;
  p.dev = a.device();
  p.ta = ta;
  p.tb = tb;
  p.K = Ka;
  p.M = na == 1 ? 1 : sa[na - 2];
  p.N = nb == 1 ? 1 : sb[nb - 1];
  Shape ba(sa.begin(), sa.end() - std::min<size_t>(na, 2));
  Shape bb(sb.begin(), sb.end() - std::min<size_t>(nb, 2));
  Shape batch;
  try {
    batch = broadcast_shapes(ba, bb, op);
  } catch (const Error&) {
    throw Error(fmt::format("{}: lhs {} and rhs {}: batch dims {} and {} cannot be broadcast", op,
                            shape_str(sa), shape_str(sb), shape_str(ba), shape_str(bb)));
  }
  p.out_shape.reserve(batch.size() + 2);  // one allocation: this runs on every call
  p.out_shape = batch;
  if (na > 1) p.out_shape.push_back(p.M);
  if (nb > 1) p.out_shape.push_back(p.N);
  if (bb.empty() && !(ta && !ba.empty())) {
    // Fast path: rhs is one matrix, so lhs's batch dims fold into rows — one gemm (not when
    // lhs's matrices are stored transposed: their rows do not follow each other).
    p.M *= shape_numel(ba);
    return p;
  }
  p.batch = shape_numel(batch);
  if (ba != batch) {
    p.off_a = batch_offsets(ba, batch, p.M * p.K);
    p.bcast_a = shape_numel(ba) < p.batch;
  }
  if (bb != batch) {
    p.off_b = batch_offsets(bb, batch, p.K * p.N);
    p.bcast_b = shape_numel(bb) < p.batch;
  }
  return p;
}

// Is x (..., R, C) the transpose of row-major (..., C, R) matrices (strides (..., 1, R))?
bool stored_transposed(const Tensor& x) {
  const int64_t n = x.dim();
  if (n < 2 || x.is_contiguous()) return false;
  const Shape& s = x.shape();
  const Shape st = x.strides();
  if (st[n - 2] != 1 || st[n - 1] != s[n - 2]) return false;
  int64_t acc = s[n - 2] * s[n - 1];
  for (int64_t d = n - 3; d >= 0; --d) {
    if (s[d] != 1 && st[d] != acc) return false;
    acc *= s[d];
  }
  return true;
}

// BLAS takes 32-bit sizes; larger ones are refused rather than silently truncated.
void check_blas_int(int64_t v) {
  if (v > INT_MAX)
    throw Error(fmt::format("matmul: dimension {} exceeds the BLAS limit {}", v, INT_MAX));
}

// dA = dC·Bᵀ, dB = Aᵀ·dC in recorded ops (create_graph), 1-D operands as matrices and batch
// dims broadcast back by sum_to.
std::vector<Tensor> matmul_grads(const Tensor& dC, const Tensor& A, const Tensor& B,
                                 const Shape& shape_a, const Shape& shape_b, bool ga, bool gb) {
  const bool va = shape_a.size() == 1, vb = shape_b.size() == 1;
  Tensor g = dC;
  if (va) g = unsqueeze(g, vb ? 0 : -2);
  if (vb) g = unsqueeze(g, -1);
  Tensor dA, dB;
  if (ga) {
    const Tensor b2 = vb ? unsqueeze(B, -1) : B;
    const Shape a2 = va ? Shape{1, shape_a[0]} : shape_a;
    dA = reshape(sum_to(matmul(g, transpose(b2, -1, -2)), a2), shape_a);
  }
  if (gb) {
    const Tensor a2 = va ? unsqueeze(A, 0) : A;
    const Shape b2 = vb ? Shape{shape_b[0], 1} : shape_b;
    dB = reshape(sum_to(matmul(transpose(a2, -1, -2), g), b2), shape_b);
  }
  return {dA, dB};
}

}  // namespace tg::matmul_plan
