// nn/zero.cpp — ZeroRedundancyAdamW: the slices of each DDP bucket this rank owns, the
// AdamW update on them, the parameter all-gather, and the state's gather / re-partition.
#include "nn/zero.hpp"

#include "autograd/tape.hpp"
#include "nn/flat_copy.hpp"
#include "ops/ops.hpp"
#include "nn/dist/dist.hpp"

#include <fmt/format.h>

#include <cmath>
#include <unordered_map>

namespace tg::nn {

namespace ddetail = tg::nn::detail;

ZeroRedundancyAdamW::ZeroRedundancyAdamW(DistributedDataParallel& ddp,
                                         const std::vector<ParamGroup>& groups, AdamWOptions opts)
    : AdamW(groups, opts), ddp_(ddp) {
  build();
}
ZeroRedundancyAdamW::ZeroRedundancyAdamW(DistributedDataParallel& ddp, AdamWOptions opts)
    : AdamW(ddp.module().parameters(), opts), ddp_(ddp) {
  build();
}

void ZeroRedundancyAdamW::build() {
  if (!ddp_.options().zero1)
    throw Error(
        "ZeroRedundancyAdamW: the DistributedDataParallel must be built with DDPOptions::zero1 = "
        "true (its buckets are reduce-scattered into the shards this optimizer steps)");
  std::unordered_map<const TensorImpl*, int>& index = index_;
  for (ParamGroup& g : groups_) {
    if (g.options.at("amsgrad") != 0) throw Error("ZeroRedundancyAdamW: amsgrad is not supported");
    for (Tensor& p : g.params) {
      index[p.impl()] = static_cast<int>(params_.size());
      params_.push_back(p);
      opts_.push_back(&g.options);
    }
  }
  steps_.assign(params_.size(), 0);
  const int W = tg::dist::world_size(), R = tg::dist::rank();
  std::unordered_map<const TensorImpl*, bool> in_ddp;
  for (const auto& b : ddp_.buckets()) {
    Shard s;
    s.segments = b.segments;
    s.bucket_numel = b.numel;
    s.len = b.numel / W;
    s.lo = R * s.len;
    s.grad = b.reduced_shard;
    const Tensor& first = b.segments.front().param;
    s.exp_avg = zeros({s.len}, first.dtype(), first.device());
    s.exp_avg_sq = zeros({s.len}, first.dtype(), first.device());
    for (const auto& seg : b.segments) {
      in_ddp[seg.param.impl()] = true;
      auto it = index.find(seg.param.impl());
      if (it == index.end()) continue;  // a DDP parameter this optimizer was not given
      const int64_t a = std::max(seg.offset, s.lo),
                    e = std::min(seg.offset + seg.numel, s.lo + s.len);
      if (a < e) s.pieces.push_back({it->second, a - seg.offset, a - s.lo, e - a});
    }
    shards_.push_back(std::move(s));
  }
  for (size_t i = 0; i < params_.size(); ++i)
    if (!in_ddp.count(params_[i].impl()))
      throw Error(
          fmt::format("ZeroRedundancyAdamW: parameter {} {} is not one of the "
                      "DistributedDataParallel's (frozen, or of another module)",
                      i, shape_str(params_[i].shape())));
}

int64_t ZeroRedundancyAdamW::shard_numel() const {
  int64_t n = 0;
  for (const Shard& s : shards_) n += s.len;
  return n;
}

void ZeroRedundancyAdamW::repartition() {
  if (state_.empty()) return;
  for (size_t i = 0; i < params_.size(); ++i) {
    auto it = state_.find(params_[i].impl());
    steps_[i] = it == state_.end() ? 0 : it->second.numbers.at("step");
  }
  for (Shard& s : shards_) {
    ddetail::fill_zeros(s.exp_avg, 0, s.len);
    ddetail::fill_zeros(s.exp_avg_sq, 0, s.len);
    for (const Piece& pc : s.pieces) {
      auto it = state_.find(params_[pc.param].impl());
      if (it == state_.end()) continue;
      ddetail::copy_elems(s.exp_avg, pc.shard_off, it->second.tensors.at("exp_avg"), pc.param_off,
                          pc.n);
      ddetail::copy_elems(s.exp_avg_sq, pc.shard_off, it->second.tensors.at("exp_avg_sq"),
                          pc.param_off, pc.n);
    }
  }
  state_.clear();
}

void ZeroRedundancyAdamW::step() {
  NoGradGuard ng;
  const int64_t syncs = ddp_.stats().syncs;
  if (syncs == last_sync_)
    throw Error(
        "ZeroRedundancyAdamW: step() without a synchronising backward since the last step (the "
        "shards hold no new gradient; was the backward inside no_sync()?)");
  last_sync_ = syncs;
  repartition();
  for (double& s : steps_) s += 1;
  for (Shard& s : shards_) {
    for (const Piece& pc : s.pieces) {
      Tensor& p = params_[pc.param];
      const detail::AdamScalars sc = detail::adam_scalars(*opts_[pc.param], steps_[pc.param], true);
      // pc.n elements from `off` of t's row-major order, a view.
      auto piece = [&](const Tensor& t, int64_t off) {
        return t.reshape({t.numel()}).narrow(0, off, pc.n);
      };
      // The kernel writes row-major memory: a strided parameter steps in a row-major copy whose
      // piece goes back through the parameter's strides.
      const Tensor pd = tg::detail::dense(p.detach());
      tg::detail::adam_step_("ZeroRedundancyAdamW", piece(pd, pc.param_off),
                             piece(s.grad, pc.shard_off), piece(s.exp_avg, pc.shard_off),
                             piece(s.exp_avg_sq, pc.shard_off), Tensor(), sc);
      if (!p.is_contiguous()) ddetail::copy_elems(p, pc.param_off, pd, pc.param_off, pc.n);
      note_inplace_write(p, "ZeroRedundancyAdamW.step");
    }
  }
  // Every rank's updated slices to every rank (one bucket at a time: one buffer of the largest).
  for (Shard& s : shards_) {
    const Tensor& first = s.segments.front().param;
    Tensor mine = zeros({s.len}, first.dtype(), first.device());
    for (const auto& seg : s.segments) {
      const int64_t a = std::max(seg.offset, s.lo),
                    e = std::min(seg.offset + seg.numel, s.lo + s.len);
      if (a < e) ddetail::copy_elems(mine, a - s.lo, seg.param, a - seg.offset, e - a);
    }
    Tensor full = Tensor::empty({s.bucket_numel}, first.dtype(), first.device());
    tg::dist::all_gather_into_tensor(full, mine);
    for (const auto& seg : s.segments) {
      Tensor p = seg.param.detach();
      ddetail::copy_elems(p, 0, full, seg.offset, seg.numel);
    }
  }
}

void ZeroRedundancyAdamW::consolidate_state_dict() {
  NoGradGuard ng;
  repartition();
  for (Shard& s : shards_) {
    const Tensor& first = s.segments.front().param;
    Tensor m = Tensor::empty({s.bucket_numel}, first.dtype(), first.device());
    Tensor v = Tensor::empty({s.bucket_numel}, first.dtype(), first.device());
    tg::dist::all_gather_into_tensor(m, s.exp_avg);
    tg::dist::all_gather_into_tensor(v, s.exp_avg_sq);
    for (const auto& seg : s.segments) {
      auto it = index_.find(seg.param.impl());
      if (it == index_.end() || steps_[it->second] == 0) continue;
      ParamState st;
      st.numbers["step"] = steps_[it->second];
      st.tensors["exp_avg"] = zeros(seg.param.shape(), seg.param.dtype(), seg.param.device());
      st.tensors["exp_avg_sq"] = zeros(seg.param.shape(), seg.param.dtype(), seg.param.device());
      ddetail::copy_elems(st.tensors["exp_avg"], 0, m, seg.offset, seg.numel);
      ddetail::copy_elems(st.tensors["exp_avg_sq"], 0, v, seg.offset, seg.numel);
      state_[seg.param.impl()] = std::move(st);
    }
  }
}

double ZeroRedundancyAdamW::clip_grad_norm_(double max_norm) {
  NoGradGuard ng;
  if (!(max_norm >= 0))
    throw Error(fmt::format("ZeroRedundancyAdamW::clip_grad_norm_: max_norm must be >= 0, got {}",
                            max_norm));
  double acc = 0;
  for (Shard& s : shards_)
    for (const Piece& pc : s.pieces) {
      Tensor g = s.grad.narrow(0, pc.shard_off, pc.n);
      acc += (g.to(kFloat64) * g.to(kFloat64)).sum().item<double>();
    }
  Tensor t = scalar_tensor(acc, kFloat64);
  tg::dist::all_reduce(t, tg::dist::ReduceOp::Sum);
  const double total = std::sqrt(t.item<double>());
  const double coef = max_norm / (total + 1e-6);
  if (coef < 1.0 || std::isnan(coef))
    for (Shard& s : shards_) {
      Tensor scaled = s.grad * coef;
      ddetail::copy_elems(s.grad, 0, scaled, 0, s.len);
    }
  return total;
}

}  // namespace tg::nn
