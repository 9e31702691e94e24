// examples/finetune/app.hpp — the finetune program: fine-tunes a Hugging Face model folder
// (GPT-2 or Llama family, nn/hf) on a text, with LoRA (PEFT's, nn/lora) or in full, in float32
// or under bfloat16 autocast; held-out loss before and after, a sample through the KV cache,
// the adapter (LoRA) or the whole model (save_pretrained) in the run folder, metrics.json, and
// --resume from the run folder's last checkpoint, exactly. --make-seeded writes a seeded model
// folder (seeded.hpp) for a machine that has none.
//
// Not here: the data (data.hpp), the training loop (train.hpp), the folder writer (seeded.hpp).
#pragma once

#include <string>
#include <vector>

namespace tgx::finetune {

// The whole program (argv without the program name); returns the exit code.
int run(const std::vector<std::string>& args);

}  // namespace tgx::finetune
