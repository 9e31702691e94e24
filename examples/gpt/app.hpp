// examples/gpt/app.hpp — the `gpt` program as a library entry point, so tests drive it without a
// subprocess: run({"--steps", "40", ...}) parses the options, trains on the fortunes (or, with
// --sample, loads <out>/best and prints generated text) and returns the exit code; bad input
// throws tgx::UserError (main() turns it into a message through run_main).
//
// A training run writes into --out: metrics.json (config, split, history, best held-out loss,
// the n-gram baseline, seconds, parameters, samples), loss_curve.png, samples.txt, best/ and
// last/ (train.hpp). A folder that holds a run is refused unless --resume or --overwrite
// (common/run_folder.hpp). Under mpirun the training is data-parallel (rank 0 prints and writes;
// every rank must be given the same options) and --sample runs on rank 0 alone; --sample refuses
// the options it does not use.
// Not here: the pieces it wires together (data, ngram, model, train, sample, report).
#pragma once

#include <string>
#include <vector>

namespace tgx::gpt {

// args without the program name. Returns 0 on success.
int run(const std::vector<std::string>& args);

}  // namespace tgx::gpt
