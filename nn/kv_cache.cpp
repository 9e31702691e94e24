// nn/kv_cache.cpp — KVCache (see kv_cache.hpp).
#include "nn/kv_cache.hpp"

#include "autograd/tape.hpp"
#include "ops/ops.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace tg::nn {
namespace {
constexpr const char* kOp = "KVCache";
}  // namespace

KVCache::KVCache(int64_t capacity, bool rolling) : capacity_(capacity), rolling_(rolling) {
  if (capacity < 1) throw Error(fmt::format("{}: capacity must be >= 1, got {}", kOp, capacity));
}

int64_t KVCache::size() const { return std::min(seen_, capacity_); }

std::pair<Tensor, Tensor> KVCache::append(const Tensor& k, const Tensor& v) {
  if (capacity_ < 1) throw Error(fmt::format("{}: default-constructed: give it a capacity", kOp));
  if (!k.defined() || !v.defined() || k.dim() != 4 || v.dim() != 4 ||
      k.shape()[0] != v.shape()[0] || k.size(1) != v.size(1) || k.size(2) != v.size(2))
    throw Error(fmt::format("{}: k {} and v {} must be (B, T, NKV, hd) and (B, T, NKV, hd_v)", kOp,
                            k.defined() ? shape_str(k.shape()) : "undefined",
                            v.defined() ? shape_str(v.shape()) : "undefined"));
  if (grad_enabled() && (k.requires_grad() || v.requires_grad()))
    throw Error(
        fmt::format("{}: k {} or v {} requires grad; the cache is for inference (use "
                    "tg::NoGradGuard)",
                    kOp, shape_str(k.shape()), shape_str(v.shape())));
  const int64_t B = k.size(0), T = k.size(1), H = k.size(2), cap = capacity_;
  const Shape want_k{B, rolling_ ? 2 * cap : cap, H, k.size(3)};
  const Shape want_v{B, want_k[1], H, v.size(3)};
  const bool fits = k_.defined() && k_.shape() == want_k && v_.shape() == want_v &&
                    k_.dtype() == k.dtype() && k_.device() == k.device();
  if (!fits) {
    if (seen_ > 0)
      throw Error(
          fmt::format("{}: k {}, v {} do not continue the cached (B, ·, NKV, hd) = ({}, ·, "
                      "{}, {}) {}; reset() before a new sequence",
                      kOp, shape_str(k.shape()), shape_str(v.shape()), k_.size(0), k_.size(2),
                      k_.size(3), dtype_name(k_.dtype())));
    k_ = zeros(want_k, k.dtype(), k.device());
    v_ = zeros(want_v, v.dtype(), v.device());
  }
  if (!rolling_) {
    if (seen_ + T > cap)
      throw Error(
          fmt::format("{}: {} cached positions + {} new exceed the capacity {} (a rolling "
                      "cache keeps the last {})",
                      kOp, seen_, T, cap, cap));
    narrow(k_, 1, seen_, T).copy_(k);
    narrow(v_, 1, seen_, T).copy_(v);
    seen_ += T;
    return {narrow(k_, 1, 0, seen_), narrow(v_, 1, 0, seen_)};
  }
  // Rolling: position p lives at p mod cap and p mod cap + cap, so any cap consecutive
  // positions are one contiguous range of the buffer. A query reads at most cap keys, itself
  // included: cap - 1 earlier ones.
  const int64_t old = std::min(seen_, cap - 1), first = seen_ - old;
  std::pair<Tensor, Tensor> out;
  if (old + T > cap)  // the new queries also read keys about to be dropped
    out = {cat({narrow(k_, 1, first % cap, old), k}, 1),
           cat({narrow(v_, 1, first % cap, old), v}, 1)};
  for (int64_t t = std::max<int64_t>(0, T - cap); t < T; ++t) {
    const int64_t at = (seen_ + t) % cap;
    for (int64_t copy : {at, at + cap}) {
      narrow(k_, 1, copy, 1).copy_(narrow(k, 1, t, 1));
      narrow(v_, 1, copy, 1).copy_(narrow(v, 1, t, 1));
    }
  }
  seen_ += T;
  if (!out.first.defined())
    out = {narrow(k_, 1, first % cap, old + T), narrow(v_, 1, first % cap, old + T)};
  return out;
}

}  // namespace tg::nn
