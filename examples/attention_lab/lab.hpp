// examples/attention_lab/lab.hpp — the attention lab: one multi-head self-attention layer (a fresh
// seeded one, or one loaded from any checkpoint that holds an nn::MultiheadAttention) run step by
// step on an input, forward and backward, with every intermediate tensor named, its shape shown
// and its gradient captured; S, P, dP and dS per head written as PNG heatmaps and NPY files; and
// how much gradient reaches each key position.
//
// The step-by-step computation is the one nn::MultiheadAttention performs (in-projection, head
// split, scaled_dot_product_attention, merge, out-projection); the lab checks that it gives the
// module's output to rounding.
#pragma once

#include <string>
#include <vector>

namespace tgx::lab {

// Runs the attention lab with command-line arguments (without the program name). Returns the
// exit code; throws tgx::UserError for bad input (run_main prints it).
int run(const std::vector<std::string>& args);

}  // namespace tgx::lab
