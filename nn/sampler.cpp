// nn/sampler.cpp — DistributedSampler (PyTorch's padding and striding rules).
#include "nn/sampler.hpp"

#include "autograd/tensor.hpp"
#include "nn/dist/dist.hpp"

#include <fmt/format.h>

namespace tg::nn {

DistributedSampler::DistributedSampler(int64_t dataset_size, DistributedSamplerOptions opts)
    : size_(dataset_size), opts_(opts) {
  replicas_ = opts.num_replicas < 0 ? tg::dist::world_size() : opts.num_replicas;
  rank_ = opts.rank < 0 ? tg::dist::rank() : opts.rank;
  if (dataset_size < 0)
    throw Error(fmt::format("DistributedSampler: dataset size must be >= 0, got {}", dataset_size));
  if (replicas_ < 1)
    throw Error(fmt::format("DistributedSampler: num_replicas must be >= 1, got {}", replicas_));
  if (rank_ < 0 || rank_ >= replicas_)
    throw Error(
        fmt::format("DistributedSampler: invalid rank {}, rank should be in the interval "
                    "[0, {}]",
                    rank_, replicas_ - 1));
  if (opts.drop_last && size_ % replicas_ != 0)
    num_samples_ = size_ / replicas_;
  else
    num_samples_ = (size_ + replicas_ - 1) / replicas_;
}

std::vector<int64_t> DistributedSampler::indices() const {
  std::vector<int64_t> all(static_cast<size_t>(size_));
  for (int64_t i = 0; i < size_; ++i) all[i] = i;
  if (opts_.shuffle) {  // Fisher–Yates on a generator of its own: seed + epoch
    Generator g;
    g.set_seed(opts_.seed + static_cast<uint64_t>(epoch_));
    for (int64_t i = size_ - 1; i > 0; --i)
      std::swap(all[i], all[g.next_u64() % static_cast<uint64_t>(i + 1)]);
  }
  const int64_t total = total_size();
  if (!opts_.drop_last) {
    for (int64_t k = size_; k < total && size_ > 0; ++k) all.push_back(all[(k - size_) % size_]);
  } else {
    all.resize(static_cast<size_t>(total));
  }
  std::vector<int64_t> mine;
  for (int64_t i = rank_; i < total; i += replicas_) mine.push_back(all[i]);
  return mine;
}

}  // namespace tg::nn
