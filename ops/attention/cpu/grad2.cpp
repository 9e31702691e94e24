// ops/attention/cpu/grad2.cpp — the fused attention's backward for create_graph, as a function of
// (q, k, v, dO), and that function's own backward, row by row (docs/backprop-through-attention.md,
// "Second order"). Per (b, h) and query row i, over the row's keys j (the plan's structural range,
// masked by rows::mask_row as the fused kernels mask):
//   P = softmax(scale·q_i·k_j + mask), dP_j = dO_i·v_j, D = Σ P dP, dS = P (dP − D)
//   first order:  dq_i = scale Σ dS k_j,  dk_j += scale dS q_i,  dv_j += P dO_i
// (with dropout's factors K_j, 0 or 1/(1−p) from the forward's keep tiles: dP_j = K_j dO_i·v_j,
// dv_j += P K_j dO_i; below, B and the E and P terms of v2 and dO2 take K_j too)
// and, for the cotangents (gq, gk, gv) of (dq, dk, dv):
//   A_j = scale (gq_i·k_j + q_i·gk_j),  B_j = dO_i·gv_j,  a = Σ P A
//   E = P (A − a),  G = A (dP − D) − a dP + B,  c = Σ P G,  H = P (G − c)
//   q2_i = scale Σ (dS gk_j + H k_j),  k2_j += scale (dS gq_i + H q_i),  v2_j += E dO_i,
//   dO2_i = Σ (P gv_j + E v_j).
// P is recomputed per row (nothing is stored between the passes), so memory is the operands plus
// O(S) per row: O(T·W) overall with a local or blocked mask, never a dense T×S matrix. Every
// operand is in the canonical layout, (B, NH, T|S, hs) contiguous with as many key/value heads as
// query heads (the caller maps layouts and grouped heads by recorded views). Sums in double.
// Deliberately not here: the gradients of a mask or a bias,
// vector kernels (plain loops: the second order is for study and checking, docs/tape.md).
#include "ops/attention/cpu/fused.hpp"
#include "ops/attention/cpu/rows.hpp"

#include "ops/core/detail.hpp"

#include <cmath>
#include <vector>

namespace tg::cpu {

namespace {
// The head-size loops run in SIMD lanes (an OpenMP simd reduction: the sum's order is fixed
// by the build, so results are reproducible).
template <typename T>
double dot(const T* a, const T* b, int64_t n) {
  double s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t t = 0; t < n; ++t) s += static_cast<double>(a[t]) * static_cast<double>(b[t]);
  return s;
}
template <typename T>
void axpy(double alpha, const T* x, double* y, int64_t n) {
  if (alpha == 0) return;
#pragma omp simd
  for (int64_t t = 0; t < n; ++t) y[t] += alpha * static_cast<double>(x[t]);
}

// One row's masked softmax over its keys lo .. hi into p (width hi - lo + 1); false when no key
// is allowed (p all 0).
template <typename T>
bool row_probs(const AttentionCall& c, int64_t b, int64_t h, int64_t i, int64_t lo, int64_t hi,
               const T* qi, const T* k, std::vector<double>& p) {
  const AttentionDims& d = c.d;
  const int64_t w = hi - lo + 1;
  for (int64_t j = 0; j < w; ++j) p[j] = c.scale * dot(qi, k + (lo + j) * d.hs, d.hs);
  rows::mask_row<double>(*c.mask, b, h, i, lo, hi, lo, w, d.S, p.data(), false);
  double m = -INFINITY;
  for (int64_t j = 0; j < w; ++j) m = std::max(m, p[j]);
  if (m == -INFINITY) {
    std::fill(p.begin(), p.begin() + w, 0.0);
    return false;
  }
  double z = 0;
  for (int64_t j = 0; j < w; ++j) z += (p[j] = std::exp(p[j] - m));
  for (int64_t j = 0; j < w; ++j) p[j] /= z;
  return true;
}

// Row i's dropout factors (0 or 1/(1−p), the forward's keep tiles) indexed by key, or null.
template <typename T>
const T* keep_row(const AttentionCall& c, int64_t bh, int64_t i) {
  if (!c.dropout) return nullptr;
  const AttentionPlan& pl = *c.plan;
  const AttentionTile& t = pl.tiles[static_cast<size_t>(i / pl.tiles[0].rows())];
  return static_cast<const T*>(c.keep) + bh * pl.per_bh + t.off + (i - t.r0) * t.width() - t.klo;
}

// dk, dv (or k2, v2) of one (b, h), summed in double, then written as T.
template <typename T>
void store(const std::vector<double>& acc, T* out) {
  for (size_t t = 0; t < acc.size(); ++t) out[t] = static_cast<T>(acc[t]);
}
}  // namespace

template <typename T>
void attention_grad_rows(const AttentionCall& c, const T* q, const T* k, const T* v, const T* dO,
                         T* dq, T* dk, T* dv) {
  const AttentionDims& d = c.d;
  const int64_t T_ = d.T, S = d.S, hs = d.hs, hv = d.hsv;
  detail::parallel_for(d.B * d.NH, d.B * d.NH * T_ * S * (hs + hv), [&](int64_t bh) {
    const int64_t b = bh / d.NH, h = bh % d.NH;
    const T *qh = q + bh * T_ * hs, *kh = k + bh * S * hs, *vh = v + bh * S * hv;
    const T* gh = dO + bh * T_ * hv;
    std::vector<double> p(S), dp(S), dqi(hs), dkh(S * hs, 0.0), dvh(S * hv, 0.0);
    for (int64_t i = 0; i < T_; ++i) {
      std::fill(dqi.begin(), dqi.end(), 0.0);
      const int64_t lo = c.plan->lo[i], hi = c.plan->hi[i];
      if (lo <= hi && row_probs(c, b, h, i, lo, hi, qh + i * hs, kh, p)) {
        const T *qi = qh + i * hs, *gi = gh + i * hv;
        const T* kr = keep_row<T>(c, bh, i);
        double D = 0;
        for (int64_t j = 0; j <= hi - lo; ++j) {
          const double kf = kr ? static_cast<double>(kr[lo + j]) : 1.0;
          dp[j] = p[j] == 0 ? 0 : kf * dot(gi, vh + (lo + j) * hv, hv);
          D += p[j] * dp[j];
        }
        for (int64_t j = 0; j <= hi - lo; ++j) {
          const int64_t kj = lo + j;
          const double kf = kr ? static_cast<double>(kr[kj]) : 1.0;
          const double ds = p[j] * (dp[j] - D);
          axpy(c.scale * ds, kh + kj * hs, dqi.data(), hs);
          axpy(c.scale * ds, qi, dkh.data() + kj * hs, hs);
          axpy(p[j] * kf, gi, dvh.data() + kj * hv, hv);
        }
      }
      for (int64_t t = 0; t < hs; ++t) dq[(bh * T_ + i) * hs + t] = static_cast<T>(dqi[t]);
    }
    store(dkh, dk + bh * S * hs);
    store(dvh, dv + bh * S * hv);
  });
}

template <typename T>
void attention_grad2_rows(const AttentionCall& c, const T* q, const T* k, const T* v, const T* dO,
                          const T* gq, const T* gk, const T* gv, T* q2, T* k2, T* v2, T* dO2) {
  const AttentionDims& d = c.d;
  const int64_t T_ = d.T, S = d.S, hs = d.hs, hv = d.hsv;
  detail::parallel_for(d.B * d.NH, d.B * d.NH * T_ * S * (hs + hv), [&](int64_t bh) {
    const int64_t b = bh / d.NH, h = bh % d.NH;
    const T *qh = q + bh * T_ * hs, *kh = k + bh * S * hs, *vh = v + bh * S * hv;
    const T *oh = dO + bh * T_ * hv, *gqh = gq + bh * T_ * hs, *gkh = gk + bh * S * hs;
    const T* gvh = gv + bh * S * hv;
    std::vector<double> p(S), dp(S), A(S), Bv(S), q2i(hs), o2i(hv);
    std::vector<double> k2h(S * hs, 0.0), v2h(S * hv, 0.0);
    for (int64_t i = 0; i < T_; ++i) {
      std::fill(q2i.begin(), q2i.end(), 0.0);
      std::fill(o2i.begin(), o2i.end(), 0.0);
      const int64_t lo = c.plan->lo[i], hi = c.plan->hi[i];
      if (lo <= hi && row_probs(c, b, h, i, lo, hi, qh + i * hs, kh, p)) {
        const T *qi = qh + i * hs, *oi = oh + i * hv, *gqi = gqh + i * hs;
        const T* kr = keep_row<T>(c, bh, i);
        const int64_t w = hi - lo + 1;
        double D = 0, a = 0;
        for (int64_t j = 0; j < w; ++j) {
          if (p[j] == 0) {
            dp[j] = A[j] = Bv[j] = 0;
            continue;
          }
          const int64_t kj = lo + j;
          const double kf = kr ? static_cast<double>(kr[kj]) : 1.0;  // dropout: dP, B scaled
          dp[j] = kf * dot(oi, vh + kj * hv, hv);
          A[j] = c.scale * (dot(gqi, kh + kj * hs, hs) + dot(qi, gkh + kj * hs, hs));
          Bv[j] = kf * dot(oi, gvh + kj * hv, hv);
          D += p[j] * dp[j];
          a += p[j] * A[j];
        }
        double cc = 0;  // Σ P G, with G = A (dP − D) − a dP + B
        for (int64_t j = 0; j < w; ++j) cc += p[j] * (A[j] * (dp[j] - D) - a * dp[j] + Bv[j]);
        for (int64_t j = 0; j < w; ++j) {
          if (p[j] == 0) continue;
          const int64_t kj = lo + j;
          const double kf = kr ? static_cast<double>(kr[kj]) : 1.0;
          const double G = A[j] * (dp[j] - D) - a * dp[j] + Bv[j];
          const double ds = p[j] * (dp[j] - D), E = p[j] * (A[j] - a), H = p[j] * (G - cc);
          axpy(c.scale * ds, gkh + kj * hs, q2i.data(), hs);
          axpy(c.scale * H, kh + kj * hs, q2i.data(), hs);
          axpy(c.scale * ds, gqi, k2h.data() + kj * hs, hs);
          axpy(c.scale * H, qi, k2h.data() + kj * hs, hs);
          axpy(E * kf, oi, v2h.data() + kj * hv, hv);
          axpy(p[j] * kf, gvh + kj * hv, o2i.data(), hv);
          axpy(E * kf, vh + kj * hv, o2i.data(), hv);
        }
      }
      for (int64_t t = 0; t < hs; ++t) q2[(bh * T_ + i) * hs + t] = static_cast<T>(q2i[t]);
      for (int64_t t = 0; t < hv; ++t) dO2[(bh * T_ + i) * hv + t] = static_cast<T>(o2i[t]);
    }
    store(k2h, k2 + bh * S * hs);
    store(v2h, v2 + bh * S * hv);
  });
}

#define TG_ATTENTION_GRAD2(T)                                                               \
  template void attention_grad_rows<T>(const AttentionCall&, const T*, const T*, const T*,  \
                                       const T*, T*, T*, T*);                               \
  template void attention_grad2_rows<T>(const AttentionCall&, const T*, const T*, const T*, \
                                        const T*, const T*, const T*, const T*, T*, T*, T*, T*);
TG_ATTENTION_GRAD2(float)
TG_ATTENTION_GRAD2(double)
#undef TG_ATTENTION_GRAD2

}  // namespace tg::cpu
