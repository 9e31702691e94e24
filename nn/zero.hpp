// nn/zero.hpp — ZeroRedundancyAdamW: AdamW whose state is sharded across ranks (ZeRO
// stage 1). With DistributedDataParallel(model, {.zero1 = true}) every bucket's gradients are
// reduce-scattered during backward, so rank r holds the averaged gradient of slice r of each
// bucket; step() updates that slice of the parameters with its own slice of exp_avg and
// exp_avg_sq, then all-gathers the parameters. Optimizer memory per rank falls by the world size.
//
//   nn::DistributedDataParallel ddp(model, {.zero1 = true});
//   nn::ZeroRedundancyAdamW opt(ddp, groups, {3e-4});
//   ... loss.backward(); opt.clip_grad_norm_(1.0); opt.step();
//
// The update is nn::AdamW's, element for element (same rule, same order of operations), so a
// run equals a single-process AdamW run up to the order of the gradient sums. state_dict() sees
// the state only after consolidate_state_dict() (a collective) gathered every rank's slices into
// full per-parameter tensors in nn::AdamW's format ("AdamW", exp_avg, exp_avg_sq, step): a
// checkpoint saved from it loads into nn::AdamW or into a ZeroRedundancyAdamW at any world size;
// load_state_dict() then re-partitions at the next step(). amsgrad is not supported.
// The parameters' .grad() hold local gradients under zero1: clip with clip_grad_norm_ here
// (it works on the averaged shards), not nn::clip_grad_norm_.
#pragma once

#include "nn/ddp.hpp"
#include "nn/optim.hpp"

#include <unordered_map>

namespace tg::nn {

class ZeroRedundancyAdamW : public AdamW {
 public:
  ZeroRedundancyAdamW(DistributedDataParallel& ddp, const std::vector<ParamGroup>& groups,
                      AdamWOptions opts = AdamWOptions());
  ZeroRedundancyAdamW(DistributedDataParallel& ddp, AdamWOptions opts = AdamWOptions());
  void step() override;
  // Collective: every rank's slices into full exp_avg / exp_avg_sq per parameter (state_dict()).
  void consolidate_state_dict();
  // Collective: the 2-norm of the averaged gradient (all shards, as one vector); scales the
  // shards by min(1, max_norm / (total + 1e-6)) like nn::clip_grad_norm_. Returns the total.
  double clip_grad_norm_(double max_norm);
  // Elements of each moment (exp_avg, exp_avg_sq) this rank holds.
  int64_t shard_numel() const;

 private:
  struct Piece {  // part of one parameter inside this rank's slice of one bucket
    int param;    // index across groups
    int64_t param_off, shard_off, n;
  };
  struct Shard {
    std::vector<DistributedDataParallel::Segment> segments;
    int64_t bucket_numel = 0, lo = 0, len = 0;
    Tensor grad;  // the DDP's reduced slice
    Tensor exp_avg, exp_avg_sq;
    std::vector<Piece> pieces;
  };
  DistributedDataParallel& ddp_;
  std::vector<Tensor> params_;        // across groups
  std::vector<const Options*> opts_;  // the group of each
  std::vector<double> steps_;
  std::unordered_map<const TensorImpl*, int> index_;  // parameter -> its index across groups
  std::vector<Shard> shards_;
  int64_t last_sync_ = -1;
  void build();
  void repartition();  // state_ (loaded or consolidated) -> shards, then state_ cleared
};

}  // namespace tg::nn
