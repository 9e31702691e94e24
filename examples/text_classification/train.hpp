// examples/text_classification/train.hpp — one training run from data to report, and prediction
// from a saved run.
//
// A run (train_and_evaluate): load the data set, seeded stratified 80/10/10 split, train the BPE
// tokenizer on the training split (saved as <out>/tokenizer.json), fit the Naive Bayes baseline
// on the same split, then train the Transformer: seeded shuffled batches, AdamW with linear
// warmup + cosine decay, gradient clipping, validation after every epoch, best model kept in
// <out>/best (by validation accuracy; the test split never selects anything), the full training
// state in <out>/last (every --save-every steps and at each epoch's end) so --resume continues
// where a killed run stopped, early stopping after --patience epochs without improvement. Then
// the best model is evaluated on the test split beside the baseline, and the report is written
// (report.hpp): metrics JSON, loss curve PNG, attention heatmaps.
// Output folder layout:
//   <out>/tokenizer.json  <out>/best/model.safetensors
//   <out>/last/{model,training_state}.safetensors <out>/metrics.json  <out>/loss_curve.png
//   <out>/attention/layer<L>_head<H>.png
// Deliberately not here: option parsing (app.hpp), the model (model.hpp).
#pragma once

#include "common/precision.hpp"
#include "text_classification/bpe.hpp"
#include "text_classification/model.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace tgx::cls {

struct RunOptions {
  std::string dataset = "spam";
  std::string data_dir;  // "" = the data set's default place
  std::string out = "runs/text_classification";
  int64_t epochs = 6, batch_size = 32, vocab_size = 6000, patience = 3;
  int64_t max_steps = 0;    // > 0: stop after this many optimizer steps (smoke tests)
  int64_t limit = 0;        // > 0: use this many examples (a seeded subset)
  int64_t save_every = 50;  // steps between <out>/last checkpoints
  double lr = 1e-3, weight_decay = 0.01, clip = 1.0, warmup_frac = 0.05;
  uint64_t seed = 0;
  int64_t split_seed = -1;  // seed of the subset and the split; < 0: the same as seed
  uint64_t data_seed() const { return split_seed < 0 ? seed : static_cast<uint64_t>(split_seed); }
  ModelConfig model;  // vocab_size / num_classes are filled in from the data
  bool resume = false, quiet = false;
  bool overwrite = false;   // a fresh run may replace the run in `out` (common/run_folder.hpp)
  std::string metrics_out;  // "" = <out>/metrics.json only
  std::vector<std::string> headers;  // spam: email headers prepended to subject + body
  tg::Device device = tg::kCPU;      // where the model trains (--device cpu | cuda | cuda:N)
  // Forward and loss in training and evaluation (common/precision.hpp); not part of the run's
  // identity: a run resumed in another precision continues.
  Precision precision = Precision::kFloat32;
};

// Trains, evaluates and writes the report; returns the metrics (also written as JSON).
nlohmann::json train_and_evaluate(const RunOptions& opts);

// --explain: the attention maps of the saved run in `out` for `text`, written to <out>/explain/
// (nothing else in the run folder changes); returns the number of pictures.
int explain(const std::string& out, const std::string& text);

struct Prediction {
  std::vector<std::string> class_names;
  std::vector<std::vector<double>> probs;  // one row per text, summing to 1
};
// A saved run: <out>/best (model, config, class names) with <out>/tokenizer.json, checked to
// belong together. UserError for a missing or mismatched run folder.
struct TrainedRun {
  Bpe bpe;
  std::vector<std::string> class_names;
  std::shared_ptr<TextClassifier> model;  // in eval mode
  // Token ids of text (truncated to max_len); UserError naming `what` for empty or non-UTF-8 text.
  std::vector<int64_t> encode(const std::string& text, const std::string& what) const;
};
TrainedRun load_run(const std::string& out);

// Loads <out>/best and <out>/tokenizer.json and classifies each text. UserError for a missing or
// mismatched run folder, or a text that is empty or not valid UTF-8.
Prediction predict(const std::string& out, const std::vector<std::string>& texts);

// The sharpness of a trained run: the top eigenvalue of the Hessian of its mean training loss
// with respect to every parameter, by power iteration on Hessian-vector products (tg::grad with
// create_graph, then the gradient of ⟨g, v⟩; the model in eval mode), on the first `examples`
// emails of the run's own training split (rebuilt from the run's dataset, split seed and
// tokenizer; data_dir "" = the data set's default place). lambda[k] is the Rayleigh quotient
// vᵀHv after k + 1 products, from a random unit v (seeded).
struct Sharpness {
  std::vector<double> lambda;
  double loss = 0;
  int64_t examples = 0, parameters = 0;
  double seconds = 0;
};
Sharpness sharpness(const std::string& out, int64_t examples, int64_t iters,
                    const std::string& data_dir = "", uint64_t seed = 0);

// What the attention lab needs to study one layer of a trained classifier on a text: the input
// that layer's self-attention receives (1, T, C) (the pre-norm layer's LayerNorm output), the
// tokens, the head count and the layer's tensor name prefix in the checkpoint.
struct AttentionInput {
  std::vector<std::string> tokens;
  tg::Tensor x;
  int64_t heads = 0;
  std::string prefix;
};
AttentionInput attention_input(const std::string& out, const std::string& text, int64_t layer);

}  // namespace tgx::cls
