// nn/kv_cache.cpp — KVCache (see kv_cache.hpp).
#include "nn/kv_cache.hpp"

#include "autograd/tape.hpp"
#include "nn/module.hpp"
#include "ops/attention/attention.hpp"
#include "ops/ops.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace tg::nn {
namespace {
constexpr const char* kOp = "KVCache";
constexpr int64_t kMaxInt = std::numeric_limits<int64_t>::max();

// "LlamaAttention(hidden_size=8, ...) at 0x...": the type and options tell layers of one model
// apart only by their address, which the error adds.
std::string layer_name(const Module& m) {
  return fmt::format("{}({}) at {}", m.type_name(), m.extra_repr(),
                     fmt::ptr(static_cast<const void*>(&m)));
}

// The earlier keys a query of `structure` may read: its tightest sliding window's left reach;
// none (every earlier key) without one. -1: blocked windows, which count positions from 0, so a
// rolling cache (whose key 0 moves) places them wrongly at any capacity.
int64_t earlier_keys_read(const AttentionMask& structure) {
  if (!structure.blocked_parts().empty()) return -1;
  int64_t left = kMaxInt;
  for (const AttentionMask::Local& l : structure.local_parts()) left = std::min(left, l.left);
  return left;
}

// Does every query of `structure` read only keys at or before its own position? A part that
// forbids later keys decides it (parts intersect): causal, a local window with no right reach, a
// causal blocked window. A cache holds only the positions appended so far, so any other structure
// would read fewer keys than the uncached forward.
bool reads_no_later_keys(const AttentionMask& structure) {
  if (structure.has_causal()) return true;
  for (const AttentionMask::Local& l : structure.local_parts())
    if (l.right <= 0) return true;
  for (const AttentionMask::Blocked& b : structure.blocked_parts())
    if (b.opts.causal) return true;
  return false;
}

// The element count of s, or -1 when it overflows int64 (a 0 dim: 0).
int64_t numel_or_overflow(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s)
    if (d == 0) return 0;
  for (int64_t d : s)
    if (__builtin_mul_overflow(n, d, &n)) return -1;
  return n;
}

void check_kv(const Tensor& k, const Tensor& v) {
  if (!k.defined() || !v.defined() || k.dim() != 4 || v.dim() != 4 ||
      k.shape()[0] != v.shape()[0] || k.size(1) != v.size(1) || k.size(2) != v.size(2))
    throw Error(fmt::format("{}: k {} and v {} must be (B, T, NKV, hs) and (B, T, NKV, hs_v)", kOp,
                            k.defined() ? shape_str(k.shape()) : "undefined",
                            v.defined() ? shape_str(v.shape()) : "undefined"));
  if (grad_enabled() && (k.requires_grad() || v.requires_grad()))
    throw Error(
        fmt::format("{}: k {} or v {} requires grad; the cache is for inference (use "
                    "tg::NoGradGuard)",
                    kOp, shape_str(k.shape()), shape_str(v.shape())));
}
}  // namespace

KVCache::KVCache(int64_t capacity, bool rolling) : capacity_(capacity), rolling_(rolling) {
  if (capacity < 1) throw Error(fmt::format("{}: capacity must be >= 1, got {}", kOp, capacity));
  if (rolling && capacity > kMaxInt / 2)
    throw Error(fmt::format(
        "{}: a rolling cache's capacity must be <= 2^62 = {} (its buffer has 2·capacity rows), "
        "got {}",
        kOp, kMaxInt / 2, capacity));
}

int64_t KVCache::size() const { return std::min(seen_, capacity_); }

std::string KVCache::where() const {
  return fmt::format("{} (capacity {}{}, position {})", kOp, capacity_, rolling_ ? ", rolling" : "",
                     seen_);
}

std::pair<Tensor, Tensor> KVCache::append(const Tensor& k, const Tensor& v) {
  return append_as(k, v, nullptr);
}

std::pair<Tensor, Tensor> KVCache::append(const Tensor& k, const Tensor& v, const Module& layer,
                                          const AttentionMask& structure) {
  if (!reads_no_later_keys(structure))
    throw Error(fmt::format(
        "{}: {} with structure '{}' lets a query read keys after its own position, which a "
        "cache holds only once they are appended: decoding would silently differ from the "
        "uncached forward; use a causal structure (AttentionMask::causal(), local(left, 0), a "
        "causal blocked window, or is_causal)",
        where(), layer_name(layer), structure.is_none() ? "none" : structure.name()));
  const int64_t reach = rolling_ ? earlier_keys_read(structure) : 0;
  if (reach < 0 || reach > capacity_ - 1) {
    const std::string reads =
        reach < 0 ? "has blocked windows, which count positions from 0 (a rolling cache moves "
                    "them)"
        : reach == kMaxInt ? "lets a query read every earlier key (no sliding window)"
                           : fmt::format("lets a query read {} keys, itself included", reach + 1);
    throw Error(fmt::format(
        "{}: a rolling cache keeps the last {} keys, but {} with structure '{}' {}: it would "
        "silently drop keys the uncached forward reads; use a rolling cache of capacity >= the "
        "window (AttentionMask::hf_sliding_window(W), W <= capacity) or a non-rolling cache",
        where(), capacity_, layer_name(layer), structure.name(), reads));
  }
  return append_as(k, v, &layer);
}

void KVCache::allocate(const Tensor& k, const Tensor& v, const Shape& want_k, const Shape& want_v) {
  if (numel_or_overflow(want_k) < 0 || numel_or_overflow(want_v) < 0)
    throw Error(fmt::format(
        "{}: its buffers k {} and v {} ((B, {}, NKV, hs) for k {}, v {}) have more elements "
        "than int64 holds; use a smaller capacity",
        where(), shape_str(want_k), shape_str(want_v), rolling_ ? "2·capacity" : "capacity",
        shape_str(k.shape()), shape_str(v.shape())));
  try {
    k_ = zeros(want_k, k.dtype(), k.device());
    v_ = zeros(want_v, v.dtype(), v.device());
  } catch (const Error& e) {
    k_ = v_ = Tensor();
    throw Error(fmt::format("{}: cannot allocate its buffers k {} and v {} {}: {}", where(),
                            shape_str(want_k), shape_str(want_v), dtype_name(k.dtype()), e.what()));
  }
}

std::pair<Tensor, Tensor> KVCache::append_as(const Tensor& k, const Tensor& v,
                                             const Module* layer) {
  if (capacity_ < 1) throw Error(fmt::format("{}: default-constructed: give it a capacity", kOp));
  check_kv(k, v);
  auto name = [layer] {  // formatted only when needed: append runs once per token and layer
    return layer ? layer_name(*layer) : std::string("a direct KVCache::append");
  };
  if (seen_ > 0 && layer != owner_)
    throw Error(fmt::format(
        "{}: holds {} positions appended by {}, and {} appends to it: one cache per layer (or "
        "reset() it before another layer uses it)",
        where(), seen_, owner_name_, name()));
  const int64_t B = k.size(0), T = k.size(1), H = k.size(2), cap = capacity_;
  if (T > kMaxInt - seen_)
    throw Error(
        fmt::format("{}: {} new positions would take the position past {}", where(), T, kMaxInt));
  if (!rolling_ && seen_ + T > cap)  // before any allocation
    throw Error(
        fmt::format("{}: {} cached positions + {} new exceed the capacity {} (a rolling "
                    "cache keeps the last {})",
                    kOp, seen_, T, cap, cap));
  const Shape want_k{B, rolling_ ? 2 * cap : cap, H, k.size(3)};
  const Shape want_v{B, want_k[1], H, v.size(3)};
  const bool fits = k_.defined() && k_.shape() == want_k && v_.shape() == want_v &&
                    k_.dtype() == k.dtype() && k_.device() == k.device();
  if (!fits) {
    if (seen_ > 0)
      throw Error(
          fmt::format("{}: k {}, v {} do not continue the cached (B, ·, NKV, hs) = ({}, ·, "
                      "{}, {}) {}; reset() before a new sequence",
                      kOp, shape_str(k.shape()), shape_str(v.shape()), k_.size(0), k_.size(2),
                      k_.size(3), dtype_name(k_.dtype())));
    allocate(k, v, want_k, want_v);
  }
  if (seen_ == 0) {
    owner_ = layer;
    owner_name_ = name();
  }
  return write(k, v);
}

std::pair<Tensor, Tensor> KVCache::write(const Tensor& k, const Tensor& v) {
  const int64_t T = k.size(1), cap = capacity_;
  if (!rolling_) {
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
