// examples/gpt/report.hpp — what a training run leaves for people besides checkpoints: the loss
// curve PNG (training loss per step, the evaluations of the training and held-out windows, the
// n-gram baseline as a line) and the samples file.
// Deliberately not here: metrics.json's assembly (app.cpp), training (train.hpp).
#pragma once

#include "gpt/train.hpp"

#include <cmath>
#include <string>
#include <vector>

namespace tgx::gpt {

// path: a PNG of the history against the step; baseline (nats per character, on the same
// held-out windows as the curve) drawn as a horizontal line when finite; the title gives the
// best model's loss on the whole held-out text and the baseline's (when final_heldout is
// finite); the y axis spans the evaluations and the baseline.
void write_loss_curve(const std::string& path, const History& h, double baseline,
                      double final_heldout = NAN, double final_baseline = NAN);

// path: the samples, each under a "--- sample i (seed s, temperature t, top-k k) ---" line.
void write_samples(const std::string& path, const std::vector<std::string>& samples,
                   const std::string& header);

}  // namespace tgx::gpt
