// examples/translation/plots.hpp — the pictures the translation example writes: the loss and
// validation curves, and attention heatmaps (encoder self-attention, decoder self-attention and
// cross-attention, per layer and head, plus the cross-attention averaged over the last decoder
// layer's heads) for one sentence pair.
//
// Not here: PNG encoding and drawing (examples/common/png.hpp).
#pragma once

#include "translation/model.hpp"
#include "translation/train.hpp"

#include <string>
#include <vector>

namespace tgx::translation {

// out_dir/loss.png (training loss, log scale) and out_dir/validation.png (exact match).
std::vector<std::string> write_curves(const TrainLog& log, const std::string& out_dir);

// Runs the model teacher-forced on (src tokens, output tokens) with attention weights kept and
// writes into dir: cross_attention.png (last decoder layer, mean over heads: source tokens on x,
// output tokens on y) and, when all_layers, encoder_self_L<l>_H<h>.png, decoder_self_L<l>_H<h>.png
// and cross_L<l>_H<h>.png for every layer and head. Returns the paths written.
std::vector<std::string> write_attention(Seq2Seq& model, const Vocabs& v,
                                         const std::vector<std::string>& src,
                                         const std::vector<std::string>& out,
                                         const std::string& dir, bool all_layers = true);

}  // namespace tgx::translation
