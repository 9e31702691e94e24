// autograd/activation_checkpoint.hpp — activation checkpointing, torch.utils.checkpoint's
// non-reentrant semantics: tg::checkpoint(fn, inputs) runs fn, keeps only its output and what fn
// reads from outside (the inputs, parameters, tensors it captured), and frees the activations in
// between; backward runs fn again with the random generator as it was (dropout draws the same
// mask) and sends the gradient on to everything fn read: parameters get their .grad (or are
// captured by tg::grad), inputs their gradient. It nests, works under create_graph (the gradients
// of the recomputed piece are recorded), and its node has an edge to every parameter, so
// post-accumulate hooks (nn::DistributedDataParallel) fire as without it. docs/tape.md,
// "Activation checkpointing".
// Deliberately not here: the reentrant variant, several outputs, preserving CUDA's own generator
// state (dropout on either device draws from tg::default_generator()).
#pragma once

#include "autograd/tensor.hpp"

#include <functional>
#include <vector>

namespace tg {

using CheckpointFn = std::function<Tensor(const std::vector<Tensor>&)>;

// fn(inputs) with its activations recomputed during backward instead of stored. fn must be
// deterministic given the generator's state and read the same tensors when run again (an
// in-place write to one of them in between makes backward throw, as for any saved tensor).
Tensor checkpoint(const CheckpointFn& fn, const std::vector<Tensor>& inputs,
                  Site site = Site::here());

}  // namespace tg
