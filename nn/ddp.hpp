// nn/ddp.hpp — nn::DistributedDataParallel: the same model on every rank, gradients averaged
// across ranks during backward (PyTorch's DDP semantics, llm.c's data parallelism).
//
//   tg::dist::init();
//   auto model = std::make_shared<MyModel>(...);
//   nn::DistributedDataParallel ddp(model);          // rank 0's weights to every rank
//   nn::AdamW opt(model->parameters(), {3e-4});
//   for (...) { opt.zero_grad(); loss(model, my_shard_of_batch).backward(); opt.step(); }
//
// Construction checks that every rank has the same parameter and buffer names, dtypes and
// shapes (a tg::Error names the first difference and both ranks' entries), then broadcasts every
// parameter and buffer from rank 0. Parameters that require grad are grouped into buckets of
// about bucket_cap_mb, in reverse registration order (the order backward usually produces their
// gradients), one dtype and device per bucket. Each parameter's post-accumulate-grad hook copies
// its finished gradient into its bucket; a bucket whose gradients are all in is averaged with an
// asynchronous all-reduce at once, so communication overlaps the rest of backward. Buckets are
// launched in index order on every rank (the collectives must match). When the backward ends, the
// reducer waits for every bucket and writes the averaged gradients back into .grad().
//
// A parameter that requires grad but gets no gradient in a synchronising backward is an error
// naming it, unless find_unused_parameters: then it counts as a zero gradient (its accumulated
// .grad() if one exists), like PyTorch's flag.
//
// no_sync(): inside the scope, backward only accumulates locally (gradient accumulation); the
// first backward after it averages the accumulated gradients.
//
// zero1: each bucket is reduce-scattered instead of all-reduced: rank r keeps the averaged
// gradient of slice r of every bucket only (see ZeroRedundancyAdamW in nn/zero.hpp, which
// steps that slice); the parameters' .grad() keep their local, un-averaged values.
// Buffers are broadcast at construction only (sync_buffers() does it again on demand).
#pragma once

#include "nn/module.hpp"

#include <memory>
#include <string>
#include <vector>

namespace tg::nn {

struct DDPOptions {
  double bucket_cap_mb = 25;
  bool find_unused_parameters = false;
  bool zero1 = false;
};

class DistributedDataParallel {
 public:
  explicit DistributedDataParallel(ModulePtr module, DDPOptions opts = {});
  ~DistributedDataParallel();
  DistributedDataParallel(const DistributedDataParallel&) = delete;
  DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;

  Module& module() { return *module_; }
  const ModulePtr& module_ptr() const { return module_; }
  const DDPOptions& options() const;

  // Gradient accumulation without communication while the guard lives.
  class NoSync {
   public:
    explicit NoSync(DistributedDataParallel& d);
    ~NoSync();
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;

   private:
    DistributedDataParallel& d_;
    bool prev_;
  };
  NoSync no_sync() { return NoSync(*this); }
  bool sync_enabled() const;

  // rank 0's buffers to every rank.
  void sync_buffers();

  // ---- buckets (for ZeroRedundancyAdamW, tests and bench) ----
  struct Segment {
    Tensor param;
    std::string name;
    int64_t offset = 0;  // into the bucket, in elements
    int64_t numel = 0;
  };
  struct BucketView {
    std::vector<Segment> segments;
    int64_t numel = 0;     // padded to a multiple of the world size under zero1
    Tensor reduced_shard;  // zero1: this rank's averaged slice after a synchronising backward
  };
  std::vector<BucketView> buckets() const;
  int64_t num_buckets() const;

  struct Stats {
    int64_t syncs = 0;                 // synchronising backward passes
    int64_t launched_in_backward = 0;  // buckets whose all-reduce started before the walk ended
    int64_t launched_at_end = 0;       // ... started when it ended (unused parameters)
    double wait_s = 0;                 // time the end of backward waited for communication
  };
  Stats stats() const;
  void reset_stats();

  struct Reducer;

 private:
  ModulePtr module_;
  std::shared_ptr<Reducer> reducer_;
};

}  // namespace tg::nn
