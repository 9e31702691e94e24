// examples/gpt/train.hpp — training the GPT on the training text and measuring it on the held-out
// text, in nats per character.
//
// Batches are B random contiguous windows of T + 1 characters of the training text (inputs the
// first T, targets the last T), the starts drawn from the run's own seeded tg::Generator (the
// "sampler"), whose state travels in the checkpoint with the step, the optimizer (AdamW, weight
// decay on matrices only), the scheduler (linear warmup then cosine to 10 %) and the global
// generator (dropout). So --resume continues exactly: the same losses as an uninterrupted run.
// Every --eval-every steps (and at the last step) the model is measured in eval mode on fixed,
// seeded sets of windows — held-out (the loss that picks best/) and training (the over-fitting
// gap) — and <out>/last is replaced through a folder swap (common/run_folder.hpp); a lower
// held-out loss writes <out>/best/model.safetensors (one file, written atomically, with the model
// config and the vocabulary in its metadata). A non-finite loss stops the run before its step
// with a tg::Error naming the step, and so does a mean loss since the last evaluation far above a
// uniform guess (common/guard.hpp: weights that blew up without turning NaN); --resume refuses
// a checkpoint with non-finite weights; --patience evaluations without a better held-out loss
// stop it early.
// Under mpirun -np N (tg::dist initialised) the model is wrapped in a DistributedDataParallel:
// every rank draws the same N x B starts from the sampler and trains on its block of B (global
// batch N x B), rank 0 evaluates and broadcasts the figures (every rank decides alike) and
// writes best/ and last/; --resume is exact at the same N (the world size is part of the
// run's identity).
// On disk: <out>/last/{model,training_state}.safetensors (history in the metadata),
// <out>/best/model.safetensors.
// Deliberately not here: options (app.hpp), the report (report.hpp), sampling (sample.hpp).
#pragma once

#include "common/precision.hpp"
#include "common/progress.hpp"
#include "gpt/data.hpp"
#include "gpt/model.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace tgx::gpt {

struct TrainOptions {
  int64_t steps = 1700;      // the schedule's length
  int64_t max_steps = 0;     // > 0: stop this run at that global step (--resume continues)
  int64_t batch_size = 128;  // windows per step
  int64_t warmup = 100;
  int64_t eval_every = 250;
  int64_t eval_windows = 64;  // windows of each fixed evaluation set
  int64_t patience = 0;       // evaluations without a better held-out loss (0: off)
  double lr = 6e-3, weight_decay = 0.1, clip = 1.0, min_lr_ratio = 0.1;
  uint64_t seed = 1;
  std::string out = "runs/gpt";
  bool resume = false;
  tg::Device device = tg::kCPU;
  // Forward and loss of training and evaluation (common/precision.hpp); not part of the run's
  // identity: a run resumed in another precision continues.
  Precision precision = Precision::kFloat32;
};

struct History {
  std::vector<double> loss;                      // training loss of every step
  std::vector<int64_t> eval_step;                // the step of each evaluation
  std::vector<double> eval_train, eval_heldout;  // their losses (nats per character)
  nlohmann::json to_json() const;
  static History from_json(const nlohmann::json& j, const std::string& what);
};

struct TrainResult {
  History history;
  int64_t step = 0, best_step = 0;
  double best_heldout = 0;  // the lowest held-out loss (that of best/)
  double seconds = 0;       // training time, this run and the runs it resumed
  bool early_stopped = false;
  int64_t skipped_steps = 0;  // f16: steps the loss scaler skipped (inf/NaN gradients), all runs
};

// The windows the model is measured on: n starts in [0, size - T - 1], seeded (the same for
// every run with this seed; independent of the sampler).
std::vector<int64_t> eval_starts(int64_t size, int64_t T, int64_t n, uint64_t seed);
// Mean cross-entropy (nats per character) of the model on the windows ids[s : s + T + 1] (eval
// mode, no tape), in batches of `batch`.
double evaluate(Gpt& model, const std::vector<int64_t>& ids, const std::vector<int64_t>& starts,
                int64_t batch, tg::Device device);

// Mean cross-entropy over the whole text: every character but the first predicted once, from
// windows of T that overlap by T/4 (each scores the positions the previous one did not), so every
// character after the first window has at least T/4 characters of context.
double evaluate_text(Gpt& model, const std::vector<int64_t>& ids, int64_t batch, tg::Device device);

// Trains model (already built from its config) on the split; `identity` (the options and data
// that make a run) is stored in checkpoints, and --resume refuses a checkpoint whose identity
// differs. UserError for bad options or a checkpoint that is missing or from another run.
TrainResult train(Gpt& model, const std::vector<int64_t>& train_ids,
                  const std::vector<int64_t>& heldout_ids, const CharVocab& vocab,
                  const TrainOptions& o, const nlohmann::json& identity, Progress& progress);

// <out>/best/model.safetensors with its config and vocabulary checked to belong together;
// UserError for a missing or foreign file.
struct SavedModel {
  GptConfig cfg;
  CharVocab vocab;
  std::shared_ptr<Gpt> model;  // on the CPU, in eval mode
  int64_t step = 0;
};
SavedModel load_best(const std::string& out);

}  // namespace tgx::gpt
