// examples/text_classification/report.hpp — what a run leaves behind for people: the training
// history (kept in checkpoints so a resumed run's curves are whole), the loss-curve PNG, the
// per-layer / per-head attention heatmaps for one input, per-class metrics as JSON and the
// Transformer-vs-baseline summary printed at the end.
// Deliberately not here: training and evaluation themselves (train.hpp).
#pragma once

#include "common/metrics.hpp"
#include "text_classification/bpe.hpp"
#include "text_classification/model.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace tgx::cls {

struct History {
  std::vector<double> train_loss;  // one per optimizer step
  std::vector<int64_t> val_step;   // the global step at each validation (end of epoch)
  std::vector<double> val_loss, val_acc;

  nlohmann::json to_json() const;
  static History from_json(const nlohmann::json& j);  // missing fields stay empty
};

// Train loss per step (raw, faint, and smoothed by an exponential moving average) with the
// validation loss and accuracy per epoch, against the step.
void write_loss_curve(const std::string& path, const History& h);

// Runs the model on text (its first max_tokens tokens) with attention capture on and writes
// <dir>/layer<L>_head<H>.png (queries down, keys across, token strings on both axes).
// Returns the number of pictures written.
int write_attention_pictures(const std::string& dir, TextClassifier& model, const Bpe& bpe,
                             const std::string& text, int64_t max_tokens = 40);

// Per-class precision / recall / F1 / support and the confusion matrix rows.
nlohmann::json metrics_json(const ConfusionMatrix& cm);

// The end-of-run summary: both accuracies, then both tables.
std::string comparison(const ConfusionMatrix& model, const ConfusionMatrix& baseline,
                       const std::string& what);

}  // namespace tgx::cls
