// nn/checkpoint_distributed.cpp — rank 0 writes, every rank loads; generator states per rank.
#include "nn/checkpoint_distributed.hpp"

#include "nn/dist/dist.hpp"
#include "nn/zero.hpp"

#include <fmt/format.h>

namespace tg::nn {

void save_checkpoint_distributed(const std::string& dir, const Module& model, Optimizer& optimizer,
                                 const LRScheduler* scheduler, int64_t step,
                                 const Metadata& extra) {
  const bool dist = tg::dist::is_initialized();
  if (auto* z = dynamic_cast<ZeroRedundancyAdamW*>(&optimizer)) z->consolidate_state_dict();
  Metadata meta = extra;
  const int W = dist ? tg::dist::world_size() : 1;
  meta["dist.world_size"] = std::to_string(W);
  const std::string mine = default_generator().get_state();
  const std::vector<std::string> rngs =
      dist ? tg::dist::all_gather_object(mine) : std::vector<std::string>{mine};
  for (int r = 0; r < W; ++r) meta[fmt::format("dist.rng.{}", r)] = rngs[r];
  std::string error;
  if (!dist || tg::dist::rank() == 0) {
    try {
      save_checkpoint(dir, model, optimizer, scheduler, step, meta);
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  if (dist) error = tg::dist::broadcast_object(error, 0);
  if (!error.empty())
    throw Error(dist && tg::dist::rank() != 0 ? "rank 0 failed to save: " + error : error);
}

CheckpointInfo load_checkpoint_distributed(const std::string& dir, Module& model,
                                           Optimizer& optimizer, LRScheduler* scheduler) {
  CheckpointInfo info = load_checkpoint(dir, model, optimizer, scheduler, /*restore_rng=*/true);
  const bool dist = tg::dist::is_initialized();
  const int W = dist ? tg::dist::world_size() : 1, R = dist ? tg::dist::rank() : 0;
  auto saved_w = info.extra.find("dist.world_size");
  const std::string key = fmt::format("dist.rng.{}", R);
  auto own = info.extra.find(key);
  if (saved_w != info.extra.end() && std::stoi(saved_w->second) == W && own != info.extra.end()) {
    default_generator().set_state(own->second);
  } else if (R > 0) {
    // Another world size: rank 0's state (restored above), advanced by this rank's number.
    for (int i = 0; i < R * 1000003; ++i) default_generator().next_u64();
  }
  return info;
}

}  // namespace tg::nn
