// examples/finetune/train.hpp — one fine-tuning run: the options, the loss of a batch (under
// bfloat16 autocast when asked), the held-out loss, the training loop with its checkpoints in
// <out>/last (resumable exactly: model, optimizer, scheduler and tg's generator, which draws the
// batches and the dropout masks), and the sample at the end.
//
// Not here: parsing options (app.cpp), the corpus (data.hpp).
#pragma once

#include "common/progress.hpp"
#include "finetune/data.hpp"
#include "nn/hf/pretrained.hpp"
#include "nn/lora.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace tgx::finetune {

struct FinetuneOptions {
  std::string model, data, out, precision = "f32";
  bool full = false, resume = false;
  tg::nn::LoraConfig lora;
  int64_t steps = 100, max_steps = 0, batch_size = 4, block = 64, warmup = 10;
  int64_t eval_windows = 16, save_every = 50;
  double lr = 1e-3, weight_decay = 0, clip = 1;
  uint64_t seed = 1;
  // The sample at the end.
  std::string prompt;
  int64_t length = 32, top_k = 40;
  double temperature = 0.8;
  // What a resumed run must agree on (the run's identity).
  nlohmann::json identity() const;
};

// Mean cross-entropy (nats per token) of the model on the fixed batches, without gradients, in
// eval mode (the mode is restored).
double heldout_loss(tg::nn::hf::PreTrainedModel& model,
                    const std::vector<std::pair<tg::Tensor, tg::Tensor>>& batches,
                    const std::string& precision);

struct RunResult {
  int64_t step = 0;  // the last step done
  bool finished = false;
  double heldout_before = 0;
  std::vector<double> losses;  // one per step, from step 1
};

// Trains from scratch or from <out>/last (o.resume) to o.steps (or o.max_steps), checkpointing
// every o.save_every steps and at the end; `params` are the trainable parameters.
RunResult train(tg::nn::hf::PreTrainedModel& model, const std::vector<tg::Tensor>& params,
                const Corpus& corpus, const FinetuneOptions& o, Progress& prog);

// The tokens after the prompt, sampled through the KV cache (o.temperature, o.top_k, o.seed).
std::string sample(tg::nn::hf::PreTrainedModel& model, const tg::nn::Tokenizer& tok,
                   const FinetuneOptions& o);

}  // namespace tgx::finetune
