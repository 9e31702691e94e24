// nn/sampler.hpp — DistributedSampler: which examples this rank reads in an epoch, with
// torch.utils.data.DistributedSampler's rules. Shuffled (seeded with seed + epoch, the same
// permutation on every rank), then padded by repeating its first indices to a multiple of the
// world size (or, with drop_last, cut to one), then every rank takes indices r, r+N, r+2N, ...:
// the ranks' lists are disjoint and equally long, and together cover the dataset. Call
// set_epoch(e) before each epoch to reshuffle.
#pragma once

#include <cstdint>
#include <vector>

namespace tg::nn {

struct DistributedSamplerOptions {
  int num_replicas = -1;  // -1: tg::dist::world_size()
  int rank = -1;          // -1: tg::dist::rank()
  bool shuffle = true;
  uint64_t seed = 0;
  bool drop_last = false;
};

class DistributedSampler {
 public:
  explicit DistributedSampler(int64_t dataset_size, DistributedSamplerOptions opts = {});
  void set_epoch(int64_t epoch) { epoch_ = epoch; }
  int64_t epoch() const { return epoch_; }
  std::vector<int64_t> indices() const;                 // this rank's, for the current epoch
  int64_t num_samples() const { return num_samples_; }  // per rank
  int64_t total_size() const { return num_samples_ * replicas_; }
  int num_replicas() const { return replicas_; }
  int rank() const { return rank_; }

 private:
  int64_t size_;
  DistributedSamplerOptions opts_;
  int replicas_, rank_;
  int64_t num_samples_;
  int64_t epoch_ = 0;
};

}  // namespace tg::nn
