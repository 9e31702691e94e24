// ops/attention/cpu/rows.hpp — internal to the CPU attention kernels (ops/attention/cpu/fused.cpp,
// the fused pair; ops/attention/cpu/grad2.cpp, the recorded backward of create_graph): the one
// place a row of scores is masked (structure, padding, lengths, bool and additive parts, position
// biases), so every kernel masks alike.
#pragma once

#include "ops/attention/attention.hpp"
#include "ops/attention/cpu/fused.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>

namespace tg::cpu::rows {

// The span [a, e) of a tile's keys klo .. klo+width-1 that row range [lo, hi] covers.
struct Span {
  int64_t a, e;
};
inline Span row_span(int64_t lo, int64_t hi, int64_t klo, int64_t width) {
  const int64_t a = std::clamp<int64_t>(lo - klo, 0, width);
  return {a, std::clamp<int64_t>(hi - klo + 1, a, width)};
}

// Row i of (b, h), keys klo .. klo+width-1 in s: inside the row's structural span (returned),
// -inf where a data part refuses the key, + the additive term elsewhere; outside the span s is
// left as it is (the caller zeroes P there), or set to -inf when fill_outside.
template <typename T>
Span mask_row(const AttentionRowMask& m, int64_t b, int64_t h, int64_t i, int64_t lo, int64_t hi,
              int64_t klo, int64_t width, int64_t S, T* s, bool fill_outside) {
  const Span sp = row_span(lo, hi, klo, width);
  if (fill_outside) {
    std::fill(s, s + sp.a, -std::numeric_limits<T>::infinity());
    std::fill(s + sp.e, s + width, -std::numeric_limits<T>::infinity());
  }
  if (m.key_block) {  // padding / lengths only: a select the compiler vectorises
    const T* kb = static_cast<const T*>(m.key_block) + b * S + klo;
    for (int64_t j = sp.a; j < sp.e; ++j) s[j] = kb[j] == T(0) ? s[j] : kb[j];
    return sp;
  }
  if (!m.key_allowed && !m.lengths && !m.allowed && !m.additive && !m.rel && !m.alibi)
    return sp;  // structure only
  const bool* ka = m.key_allowed ? m.key_allowed + b * S : nullptr;
  const int64_t len = m.lengths ? m.lengths[b] : S;
  const bool* al = nullptr;
  const double* ad = nullptr;
  int64_t alj = 0, adj = 0;
  if (m.allowed) {
    const int64_t* st = m.allowed_st;
    al = m.allowed + b * st[0] + h * st[1] + i * st[2];
    alj = st[3];
  }
  if (m.additive) {
    const int64_t* st = m.additive_st;
    ad = m.additive + b * st[0] + h * st[1] + i * st[2];
    adj = st[3];
  }
  const double* rel = m.rel ? m.rel + h * m.rel_hs : nullptr;
  const double slope = m.alibi ? m.alibi[h] : 0.0;
  const int64_t ip = i + m.shift;
  for (int64_t j = sp.a; j < sp.e; ++j) {
    const int64_t kj = klo + j;
    if (kj >= len || (ka && !ka[kj]) || (al && !al[kj * alj])) {
      s[j] = -std::numeric_limits<T>::infinity();
      continue;
    }
    double add = ad ? ad[kj * adj] : 0.0;
    if (rel)
      add +=
          rel[AttentionMask::t5_bucket(kj - ip, m.rel_bidirectional, m.rel_n, m.rel_max_distance)];
    if (m.alibi) add -= slope * static_cast<double>(ip > kj ? ip - kj : kj - ip);
    if (ad || rel || m.alibi) s[j] = static_cast<T>(s[j] + add);
  }
  return sp;
}

}  // namespace tg::cpu::rows
