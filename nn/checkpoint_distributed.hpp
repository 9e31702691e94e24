// nn/checkpoint_distributed.hpp — training checkpoints of a data-parallel run: rank 0 writes
// (through nn::save_checkpoint, atomically as always), every rank loads the same files. The format
// is the single-process one (nn/checkpoint.hpp) plus metadata: dist.world_size and every rank's
// generator state (dist.rng.<rank>), so a run resumes bit for bit at the same world size, and at
// another world size with the same weights and optimizer state (ZeRO-1 shards are gathered
// before saving and re-partitioned after loading; new ranks draw from rank 0's generator state
// advanced by their rank). A single process (world size 1, no init) uses it unchanged.
#pragma once

#include "nn/checkpoint.hpp"

namespace tg::nn {

// Collective (every rank calls it): gathers ZeRO-1 state and generator states, rank 0 writes,
// and every rank returns once the files are complete (or throws rank 0's error).
void save_checkpoint_distributed(const std::string& dir, const Module& model, Optimizer& optimizer,
                                 const LRScheduler* scheduler, int64_t step,
                                 const Metadata& extra = {});
// Every rank reads dir; returns the saved world size in info.extra["dist.world_size"].
CheckpointInfo load_checkpoint_distributed(const std::string& dir, Module& model,
                                           Optimizer& optimizer, LRScheduler* scheduler);

}  // namespace tg::nn
