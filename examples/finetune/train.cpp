// examples/finetune/train.cpp — the loss, the held-out evaluation, the resumable training loop
// and the sample of a fine-tuning run (see train.hpp).
#include "finetune/train.hpp"

#include "autograd/tape.hpp"
#include "common/cli.hpp"
#include "common/run_folder.hpp"
#include "common/same_run.hpp"
#include "common/text.hpp"
#include "nn/checkpoint.hpp"
#include "nn/checkpoint_distributed.hpp"
#include "nn/clip.hpp"
#include "nn/optim.hpp"
#include "nn/schedule.hpp"
#include "ops/autocast/autocast.hpp"
#include "ops/ops.hpp"

#include <fmt/format.h>

#include <cmath>
#include <optional>

namespace tgx::finetune {
namespace {

using Json = nlohmann::json;

// logits (B, T, V) of x (B, T) against targets y (B, T): the mean cross-entropy, the forward
// under bfloat16 autocast with --precision bf16 (the loss itself runs in float32 there).
tg::Tensor lm_loss(tg::nn::hf::PreTrainedModel& model, const tg::Tensor& x, const tg::Tensor& y,
                   const std::string& precision) {
  std::optional<tg::AutocastGuard> guard;
  if (precision == "bf16") guard.emplace(tg::kBFloat16);
  const tg::Tensor logits = model.forward(x);
  const int64_t BT = logits.size(0) * logits.size(1), V = logits.size(2);
  return tg::cross_entropy(tg::reshape(logits, {BT, V}), tg::reshape(y, {BT}));
}

// --resume: the checkpoint in <out>/last (of the same run: identity) into model, opt, sched and
// r (its step, held-out loss before and losses).
void resume(tg::nn::hf::PreTrainedModel& model, tg::nn::AdamW& opt,
            tg::nn::CosineWithWarmupLR& sched, const Json& identity, const FinetuneOptions& o,
            RunResult& r, Progress& prog) {
  const std::string last = last_dir(o.out);
  if (!file_exists(tg::nn::checkpoint_model_path(last)))
    throw UserError(fmt::format("--resume: {} holds no checkpoint to resume", last));
  const auto saved = tg::nn::load_safetensors(tg::nn::checkpoint_model_path(last));
  check_same_run(meta_json(saved.metadata, "finetune.run", last, "finetune"), identity, last);
  const tg::nn::CheckpointInfo info = resume_checkpoint(last, model, opt, sched);
  r.step = info.step;
  r.heldout_before =
      meta_json(info.extra, "finetune.heldout_before", last, "finetune").get<double>();
  r.losses = meta_json(info.extra, "finetune.losses", last, "finetune").get<std::vector<double>>();
  prog.line(fmt::format("resumed from {} at step {}", last, r.step));
}

}  // namespace

Json FinetuneOptions::identity() const {
  Json j = {{"model", model},
            {"data", data},
            {"precision", precision},
            {"full", full},
            {"steps", steps},
            {"batch_size", batch_size},
            {"block", block},
            {"warmup", warmup},
            {"lr", lr},
            {"weight_decay", weight_decay},
            {"clip", clip},
            {"seed", seed}};
  if (!full)
    j["lora"] = {{"r", lora.r},
                 {"lora_alpha", lora.lora_alpha},
                 {"lora_dropout", lora.lora_dropout},
                 {"target_modules", lora.target_modules}};
  return j;
}

double heldout_loss(tg::nn::hf::PreTrainedModel& model,
                    const std::vector<std::pair<tg::Tensor, tg::Tensor>>& batches,
                    const std::string& precision) {
  const bool was_training = model.is_training();
  model.eval();
  tg::NoGradGuard ng;
  double sum = 0;
  int64_t windows = 0;
  for (const auto& [x, y] : batches) {
    sum += lm_loss(model, x, y, precision).item<double>() * static_cast<double>(x.size(0));
    windows += x.size(0);
  }
  model.train(was_training);
  return sum / static_cast<double>(windows);
}

RunResult train(tg::nn::hf::PreTrainedModel& model, const std::vector<tg::Tensor>& params,
                const Corpus& corpus, const FinetuneOptions& o, Progress& prog) {
  tg::nn::AdamWOptions ao(o.lr);
  ao.weight_decay = o.weight_decay;
  tg::nn::AdamW opt(params, ao);
  tg::nn::CosineWithWarmupLR sched(opt, o.warmup, o.steps, 0.1);
  const Json identity = o.identity();
  RunResult r;
  if (o.resume) {
    resume(model, opt, sched, identity, o, r, prog);
  } else {
    r.heldout_before = heldout_loss(
        model, fixed_batches(corpus.heldout, o.eval_windows, o.batch_size, o.block), o.precision);
    prog.line(fmt::format("held-out loss before: {:.4f} nats/token", r.heldout_before));
  }
  const int64_t end = o.max_steps > 0 ? std::min(o.max_steps, o.steps) : o.steps;
  auto checkpoint = [&] {
    const tg::nn::Metadata extra = {{"finetune.run", identity.dump()},
                                    {"finetune.heldout_before", Json(r.heldout_before).dump()},
                                    {"finetune.losses", Json(r.losses).dump()}};
    save_last(o.out, [&](const std::string& dir) {
      tg::nn::save_checkpoint_distributed(dir, model, opt, &sched, r.step, extra);
    });
  };
  model.train();
  prog.start_epoch(1, 1, end - r.step);
  while (r.step < end) {
    auto [x, y] = random_batch(corpus.train, o.batch_size, o.block);
    tg::Tensor loss = lm_loss(model, x, y, o.precision);
    const double lv = loss.item<double>();
    if (!std::isfinite(lv))
      throw tg::Error(
          fmt::format("training diverged: the loss is {} at step {}; {}. Lower --lr "
                      "(now {})",
                      lv, r.step + 1, checkpoint_left(o.out), o.lr));
    opt.zero_grad();
    loss.backward();
    if (o.clip > 0) tg::nn::clip_grad_norm_(params, o.clip);
    opt.step();
    sched.step();
    r.losses.push_back(lv);
    ++r.step;
    prog.step(lv, o.batch_size);
    if (r.step % o.save_every == 0 || r.step == end) checkpoint();
  }
  prog.end_epoch(fmt::format("step {}/{}: mean training loss {:.4f}", r.step, o.steps,
                             prog.epoch_mean_loss()));
  r.finished = r.step >= o.steps;
  return r;
}

std::string sample(tg::nn::hf::PreTrainedModel& model, const tg::nn::Tokenizer& tok,
                   const FinetuneOptions& o) {
  std::vector<int64_t> ids = tok.encode(o.prompt);
  if (ids.empty()) ids.push_back(tok.bos_token_id().value_or(tok.eos_token_id().value_or(0)));
  const int64_t P = static_cast<int64_t>(ids.size());
  const int64_t n = std::min(o.length, model.max_positions() - P);
  if (n <= 0) return "";
  tg::nn::hf::GenerationOptions g;
  g.temperature = o.temperature;
  g.top_k = o.top_k;
  g.seed = o.seed;
  const bool was_training = model.is_training();
  model.eval();
  tg::Tensor out;
  {
    std::optional<tg::AutocastGuard> guard;
    if (o.precision == "bf16") guard.emplace(tg::kBFloat16);
    out = model.generate(tg::tensor(ids, {1, P}), n, g);
  }
  model.train(was_training);
  const std::vector<int64_t> all = out.to_vector<int64_t>();
  return tok.decode(std::vector<int64_t>(all.begin() + P, all.end()), true);
}

}  // namespace tgx::finetune
