// nn/kv_cache.hpp — the key/value cache of incremental decoding: one per attention layer, it
// keeps the keys and values (heads last, (B, n, NKV, hs)) of every position seen so far, so that
// generating one more token runs the model on that token alone (queries at an offset: the
// attention's structural mask aligned bottom-right, docs/attention.md).
//
//   nn::KVCache cache(block);                    // up to `block` positions
//   auto [K, V] = cache.append(k, v);            // k, v (B, T, NKV, hs): the new positions
//   // K, V (B, n + T, NKV, hs): every cached position, oldest first, then the new ones
//
// A rolling cache keeps the last `capacity` positions and drops older ones: exact for
// sliding-window attention whose window is at most `capacity` keys per query, the query included
// (AttentionMask::hf_sliding_window(W), W <= capacity: older keys are never read). Its appends
// return the capacity - 1 positions before the new ones, then the new ones.
// Its buffer holds each position twice, at p mod capacity and p mod capacity + capacity, so the
// last `capacity` positions are always one contiguous range: append writes only the new rows,
// never shifts. Values are copied in (the caller's tensors may be views of a projection). The
// cache is not differentiable (generation runs under NoGradGuard); append refuses inputs that
// require grad while grad mode is on.
// One cache per layer: the attention layers append through append(k, v, layer, structure), which
// refuses a structure that lets a query read later keys (not causal: the cache does not hold
// them yet), a cache holding another layer's positions (until reset()) and a rolling cache that
// keeps fewer keys than the layer's queries read (the uncached forward would read the dropped
// ones: only a sliding window of at most `capacity` keys makes a rolling cache exact).
// Deliberately not here: the attention modules that use it (nn/attention.hpp, nn/llama.hpp).
#pragma once

#include "autograd/tensor.hpp"

#include <string>
#include <utility>

namespace tg {
class AttentionMask;
}

namespace tg::nn {

class Module;

class KVCache {
 public:
  KVCache() = default;
  // capacity >= 1 positions; rolling: keep the last `capacity` instead of refusing more (its
  // buffer has 2·capacity rows, so capacity <= 2^62). The buffer is allocated at the first append
  // (its shape comes from k and v): a capacity too large for memory throws there, naming the cache.
  explicit KVCache(int64_t capacity, bool rolling = false);

  // Appends k, v (B, T, NKV, hs) and returns (K, V) (B, n, NKV, hs): every kept earlier
  // position (rolling: at most capacity - 1), oldest first, then the T new ones (rolling, T > 1:
  // possibly more than capacity keys in all, copied, since the new queries need keys it drops).
  // Throws tg::Error naming the shapes when k and v disagree with each other or with the earlier
  // appends, or (not rolling) when the positions would exceed capacity.
  std::pair<Tensor, Tensor> append(const Tensor& k, const Tensor& v);
  // The attention layers' append: also throws, naming both layers, when the cache holds positions
  // another layer appended, and, rolling, when a query of `structure` (aligned bottom-right) may
  // read more than `capacity` keys, itself included (no sliding window, or a wider one, or
  // blocked windows, which count positions from 0).
  std::pair<Tensor, Tensor> append(const Tensor& k, const Tensor& v, const Module& layer,
                                   const AttentionMask& structure);

  int64_t capacity() const { return capacity_; }
  bool rolling() const { return rolling_; }
  int64_t size() const;                       // positions kept (<= capacity)
  int64_t position() const { return seen_; }  // positions appended since the last reset
  bool empty() const { return seen_ == 0; }
  void reset() { seen_ = 0; }  // keeps the buffers for the next sequence (for any layer)

 private:
  std::pair<Tensor, Tensor> append_as(const Tensor& k, const Tensor& v, const Module* layer);
  // k, v written into the buffers (allocated, shapes checked); the keys and values to attend.
  std::pair<Tensor, Tensor> write(const Tensor& k, const Tensor& v);
  void allocate(const Tensor& k, const Tensor& v, const Shape& want_k, const Shape& want_v);
  std::string where() const;  // "KVCache (capacity 4, rolling, position 9)"
  int64_t capacity_ = 0;
  bool rolling_ = false;
  int64_t seen_ = 0;
  const Module* owner_ = nullptr;  // the layer whose positions it holds (seen_ > 0); null: direct
  std::string owner_name_;         // how errors name it
  Tensor k_, v_;  // (B, capacity, NKV, hs), or (B, 2·capacity, NKV, hs) when rolling
};

}  // namespace tg::nn
