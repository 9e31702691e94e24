// examples/common/guard.hpp — what the training programs check so that a broken model is never
// reported or saved as a result: a loss far above a uniform guess (weights that blew up without
// turning NaN) and non-finite weights in a model loaded from disk.
// Not here: the non-finite loss check of each training step (each loop names its own step and
// checkpoint in that message).
#pragma once

#include "nn/module.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace tgx {

// A model that guesses uniformly among V outcomes scores log V nats; a mean training loss this
// many times above it means the weights blew up (a model that learns slowly stays near log V).
constexpr double kBlownUpFactor = 4;

// The mean of losses[from:] when it is above kBlownUpFactor x log(outcomes), as the start of a
// "training diverged: ..." message naming steps from+1..losses.size(); "" otherwise (also for
// an empty range).
std::string blown_up(const std::vector<double>& losses, size_t from, int64_t outcomes);

// UserError "<what>: weight <name> holds NaN or infinite values (<why>); <refusal>" for the first
// floating parameter or buffer of `m` (in state_dict order) that is not finite.
void require_finite_weights(const tg::nn::Module& m, const std::string& what,
                            const std::string& refusal);

}  // namespace tgx
