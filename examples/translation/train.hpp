// examples/translation/train.hpp — training and evaluating a Seq2Seq: sentence pairs encoded to
// ids, seeded shuffled batches, teacher forcing with label-smoothed cross-entropy, AdamW with
// warmup + cosine decay and gradient clipping, periodic validation (greedy exact match on a
// validation subset), the best model kept, and checkpoints that --resume continues bit for bit.
//
// On disk (under TrainOptions::out_dir):
//   last/        model.safetensors + training_state.safetensors (tg::nn::save_checkpoint),
//                vocab.json, history.json (loss and validation curves so far)
//   best/        model.safetensors (the best validation exact match) + vocab.json
// Both model files carry metadata translation.config (ModelConfig JSON) and translation.vocab
// (the vocabularies' JSON): a checkpoint is only loaded by a run with the same model and
// vocabularies, otherwise UserError says what differs.
//
// Not here: argument parsing, plots and reports (app.hpp).
#pragma once

#include "common/precision.hpp"
#include "common/progress.hpp"
#include "nn/checkpoint.hpp"
#include "translation/data.hpp"
#include "translation/model.hpp"
#include "translation/vocab.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace tgx::translation {

// The two vocabularies and the token level, as saved beside checkpoints (vocab.json).
struct Vocabs {
  Vocab src, tgt;
  Level level = Level::Word;
  std::string to_json() const;
  static Vocabs from_json(const std::string& text, const std::string& what);
  static Vocabs build(const Dataset& d);  // from every split (the token inventory only)
};

struct Encoded {
  std::vector<std::vector<int64_t>> src;  // tokens + <eos>
  std::vector<std::vector<int64_t>> tgt;  // tokens (no <bos>/<eos>)
};
Encoded encode_examples(const std::vector<Example>& ex, const Vocabs& v, const std::string& what);
// The longest source (with <eos>) or target (with <bos>/<eos>) sequence in the dataset.
int64_t longest_sequence(const Dataset& d);

struct EvalResult {
  double exact_match = 0;  // percent
  double chrf = 0;
  double seconds = 0;
  std::vector<std::string> hypotheses, references;
};
// beam <= 1: greedy decoding; else beam search with length_penalty.
EvalResult evaluate(Seq2Seq& model, const std::vector<Example>& ex, const Vocabs& v, int64_t beam,
                    double length_penalty = 1.0, int64_t batch = 200);
// Translates one tokenised sentence; returns the output tokens.
std::vector<std::string> translate_tokens(Seq2Seq& model, const Vocabs& v,
                                          const std::vector<std::string>& src, int64_t beam,
                                          double length_penalty = 1.0);

struct TrainOptions {
  int64_t steps = 600;    // length of the schedule
  int64_t max_steps = 0;  // > 0: stop this run after this many steps (smoke runs)
  int64_t batch_size = 128;
  double lr = 1e-3, weight_decay = 0.01, clip = 1.0, label_smoothing = 0.1;
  int64_t warmup = 100;
  int64_t eval_every = 100;    // validation and checkpoint period, in steps
  int64_t valid_subset = 500;  // validation sentences decoded each time
  int64_t patience = 3;        // stop after this many validations without a better one (0: off)
  double time_limit_s = 0;     // > 0: stop (and keep the best) after this much training time
  uint64_t seed = 1;
  std::string out_dir = "runs/translation";
  bool resume = false;
  bool overwrite = false;  // a fresh run may replace the run in out_dir (common/run_folder.hpp)
  tg::Device device = tg::kCPU;  // where training steps run; decoding runs on the CPU
  // Forward and loss of training and validation (common/precision.hpp); a run resumed in another
  // precision continues.
  Precision precision = Precision::kFloat32;
};

struct TrainLog {
  std::vector<double> steps, losses;             // every step's training loss
  std::vector<double> valid_steps, valid_exact;  // each validation
  int64_t start_step = 0, final_step = 0, best_step = 0;
  double best_valid = -1;
  bool early_stopped = false;
  double seconds = 0;         // this run's wall time in the training loop (validation included)
  int64_t skipped_steps = 0;  // f16: steps the loss scaler skipped (inf/NaN gradients), all runs
};

std::string checkpoint_dir(const std::string& out_dir);  // out_dir/checkpoint
std::string best_dir(const std::string& out_dir);        // out_dir/best
// Checks that a saved model file was written for this config and these vocabularies
// (UserError naming the file and every difference); returns its metadata.
tg::nn::Metadata check_saved_model(const std::string& model_path, const ModelConfig& cfg,
                                   const Vocabs& v);

TrainLog train(Seq2Seq& model, const Dataset& d, const Vocabs& v, const TrainOptions& opts,
               Progress& progress);

}  // namespace tgx::translation
