// examples/attention_lab/model_lab.hpp — attention_lab --model DIR --text "...": the attention of
// one layer of a Hugging Face model folder (GPT-2 or Llama family, nn/hf), on the tokens of a
// text, forward and backward (the next-token loss of the whole text): S, P, dP and dS per head as
// PNG heatmaps and NPY files, with the text's tokens on the axes.
//
// How: forward output hooks on the chosen layer's projections (c_attn / c_proj for GPT-2;
// q_proj, k_proj, v_proj / o_proj for Llama) recompute that layer's attention from the
// projections' outputs through scaled_dot_product_attention with an AttentionProbe, and hand the
// output projection of that result to the model in place of its own; the lab reports how far the
// two differ (rounding only). Nothing of the model is changed for good: the hooks are removed.
//
// Not here: the seeded single-layer lab (lab.hpp), training.
#pragma once

#include <string>
#include <vector>

namespace tgx::lab {

// Whether the arguments ask for the model lab (--model given).
bool wants_model_lab(const std::vector<std::string>& args);
// Runs it (arguments without the program name); returns the exit code.
int run_model_lab(const std::vector<std::string>& args);

}  // namespace tgx::lab
