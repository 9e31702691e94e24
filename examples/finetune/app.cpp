// examples/finetune/app.cpp — the finetune program's options (each refused outside its range),
// the run from model folder to report (metrics.json, the adapter or the model), and
// --make-seeded (see app.hpp).
#include "finetune/app.hpp"

#include "autograd/io.hpp"
#include "common/cli.hpp"
#include "common/progress.hpp"
#include "common/run_folder.hpp"
#include "finetune/seeded.hpp"
#include "finetune/train.hpp"
#include "nn/hf/gpt2.hpp"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>

namespace tgx::finetune {
namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

ArgParser make_parser() {
  ArgParser p("finetune",
              "Fine-tunes a Hugging Face model folder (GPT-2 or Llama family) on a text: LoRA "
              "(PEFT's) or full, float32 or bf16 autocast; held-out loss before and after, a "
              "sample through the KV cache, the adapter or the model saved in --out. "
              "--make-seeded DIR writes a seeded model folder with a real tokenizer.");
  p.option("model", "", "the model folder (config.json, model.safetensors, tokenizer files)")
      .option("lora", "8", "LoRA rank r")
      .option("lora-alpha", "16", "LoRA alpha (scaling alpha / r)")
      .option("lora-dropout", "0", "dropout on the LoRA branch's input, in [0, 1)")
      .option("target", "", "LoRA target modules (default: c_attn for GPT-2, q_proj,v_proj else)")
      .flag("full", "full fine-tuning (every parameter) instead of LoRA")
      .option("data", "", "a text file or a folder of fortune files (default: Debian's fortunes)")
      .option("precision", "f32", "f32, or bf16 (autocast: bfloat16 matmuls and attention)")
      .option("steps", "100", "training steps (the length of the schedule)")
      .option("max-steps", "0", "stop this run at that step (0: run to --steps; --resume goes on)")
      .option("batch-size", "4", "windows per step")
      .option("block", "64", "tokens per window")
      .option("lr", "0.001", "peak learning rate (AdamW, linear warmup then cosine to 10 %)")
      .option("weight-decay", "0", "AdamW weight decay")
      .option("warmup", "", "warmup steps (default: a tenth of --steps, at most 10)")
      .option("clip", "1.0", "gradient norm clipping (0: off)")
      .option("eval-windows", "16", "held-out windows for the loss before and after")
      .option("save-every", "50", "steps between checkpoints (<out>/last)")
      .option("prompt", "The", "the sample's prompt")
      .option("length", "32", "tokens to sample")
      .option("temperature", "0.8", "sampling temperature (0: greedy)")
      .option("top-k", "40", "sample among the k likeliest tokens (0: all)")
      .option("seed", "1", "seed of the batches, dropout and the sample")
      .option("threads", "0", "CPU threads (0: OMP_NUM_THREADS or all cores)")
      .option("out", "runs/finetune", "run folder")
      .flag("resume", "continue training from --out/last")
      .flag("overwrite", "start a new run in an --out that holds one (replaces its outputs)")
      .option("make-seeded", "", "write a seeded model folder here and exit")
      .option("family", "gpt2", "--make-seeded: gpt2 or llama")
      .option("d-model", "128", "--make-seeded: width")
      .option("layers", "4", "--make-seeded: blocks")
      .option("heads", "4", "--make-seeded: attention heads")
      .option("kv-heads", "2", "--make-seeded: llama's key/value heads")
      .option("npm-root", "", "--make-seeded: npm's global packages (default: the usual places)")
      .flag("quiet", "no progress output");
  return p;
}

int make_seeded(const ArgParser& a) {
  refuse_unused(
      a, "--make-seeded",
      {"make-seeded", "family", "d-model", "layers", "heads", "kv-heads", "seed", "npm-root"});
  SeededFolderOptions s;
  s.family = a.str("family");
  s.d_model = a.integer("d-model");
  s.layers = a.integer("layers");
  s.heads = a.integer("heads");
  s.kv_heads = a.integer("kv-heads");
  s.seed = static_cast<uint64_t>(int_option(a, "seed", 0));
  s.npm_root = a.str("npm-root");
  const auto files = write_seeded_folder(a.str("make-seeded"), s);
  fmt::print("wrote a seeded {} folder (d {}, {} layers, {} heads): {}/{{{}}}\n", s.family,
             s.d_model, s.layers, s.heads, a.str("make-seeded"), fmt::join(files, ", "));
  return 0;
}

FinetuneOptions options(const ArgParser& a) {
  FinetuneOptions o;
  o.model = a.str("model");
  if (o.model.empty()) throw UserError("--model: give a model folder (or --make-seeded DIR)");
  o.data = a.str("data");
  o.out = a.str("out");
  if (o.out.empty()) throw UserError("--out: must not be empty");
  o.precision = a.str("precision");
  if (o.precision != "f32" && o.precision != "bf16")
    throw UserError(fmt::format("--precision {}: must be f32 or bf16", o.precision));
  o.full = a.flag("full");
  for (const char* l : {"lora", "lora-alpha", "lora-dropout", "target"})
    if (o.full && a.given(l))
      throw UserError(fmt::format("--{} is a LoRA option; --full trains every parameter", l));
  o.lora.r = int_option(a, "lora", 1, 65536);
  o.lora.lora_alpha = positive_option(a, "lora-alpha", 1e6);
  o.lora.lora_dropout = number_option(a, "lora-dropout", 0, 1);
  if (o.lora.lora_dropout >= 1) throw UserError("--lora-dropout 1: must be < 1");
  if (a.given("target")) o.lora.target_modules = split_list(a.str("target"), ',', "--target");
  o.steps = int_option(a, "steps", 1, 100000000);
  o.max_steps = int_option(a, "max-steps", 0, 100000000, "0: run to --steps");
  o.batch_size = int_option(a, "batch-size", 1, 65536);
  o.block = int_option(a, "block", 1, 1 << 20);
  o.warmup = a.given("warmup") ? int_option(a, "warmup", 0, o.steps, "at most --steps")
                               : std::min<int64_t>(10, o.steps / 10);
  o.eval_windows = int_option(a, "eval-windows", 1, 1000000);
  o.save_every = int_option(a, "save-every", 1, 100000000);
  o.lr = positive_option(a, "lr", 10);
  o.weight_decay = number_option(a, "weight-decay", 0, 10);
  o.clip = number_option(a, "clip", 0, 1e6, "0: off");
  o.seed = static_cast<uint64_t>(int_option(a, "seed", 0));
  o.prompt = a.str("prompt");
  o.length = int_option(a, "length", 0, 1000000);
  o.temperature = number_option(a, "temperature", 0, 100, "0: greedy");
  o.top_k = int_option(a, "top-k", 0, 1000000, "0: off");
  o.resume = a.flag("resume");
  return o;
}

// The files a run writes besides the common ones (what --overwrite removes).
std::vector<std::string> own_files() {
  std::vector<std::string> f = common_run_files();
  for (const char* n : {"adapter/adapter_model.safetensors", "adapter/adapter_config.json",
                        "model/config.json", "model/model.safetensors", "model/vocab.json",
                        "model/merges.txt", "model/tokenizer.json", "model/tokenizer_config.json"})
    f.emplace_back(n);
  return f;
}

// LoRA on the config's targets (the family's defaults when none were given), or every parameter.
std::vector<tg::Tensor> prepare(tg::nn::hf::PreTrainedModel& model, FinetuneOptions& o) {
  if (o.full) return tg::nn::trainable_parameters(model);
  const bool gpt2 = dynamic_cast<tg::nn::hf::GPT2LMHeadModel*>(&model) != nullptr;
  if (o.lora.target_modules.empty())
    o.lora.target_modules =
        gpt2 ? std::vector<std::string>{"c_attn"} : std::vector<std::string>{"q_proj", "v_proj"};
  o.lora.fan_in_fan_out = gpt2;  // PEFT's flag for Conv1D layers
  o.lora.base_model_name_or_path = o.model;
  try {
    tg::nn::apply_lora(model, o.lora);
  } catch (const tg::Error& e) {
    throw UserError(fmt::format("--target: {}", e.what()));
  }
  return tg::nn::trainable_parameters(model);
}

// The model folder's tokenizer files, copied beside a fully fine-tuned model.
void copy_tokenizer(const std::string& from, const std::string& to) {
  for (const char* n : {"vocab.json", "merges.txt", "tokenizer.json", "tokenizer_config.json"})
    if (fs::is_regular_file(fs::path(from) / n))
      fs::copy_file(fs::path(from) / n, fs::path(to) / n, fs::copy_options::overwrite_existing);
}

int64_t numel(const std::vector<tg::Tensor>& ts) {
  int64_t n = 0;
  for (const tg::Tensor& t : ts) n += t.numel();
  return n;
}

// After the last step: the held-out loss, the sample, the adapter or the model, metrics.json.
void finish(tg::nn::hf::PreTrainedModel& model, const tg::nn::Tokenizer& tok, const Corpus& corpus,
            const FinetuneOptions& o, const RunResult& r, int64_t total, int64_t trained,
            std::chrono::steady_clock::time_point t0) {
  const double after = heldout_loss(
      model, fixed_batches(corpus.heldout, o.eval_windows, o.batch_size, o.block), o.precision);
  const std::string text = sample(model, tok, o);
  const std::string saved = (fs::path(o.out) / (o.full ? "model" : "adapter")).string();
  if (o.full) {
    model.save_pretrained(saved, /*overwrite=*/true);
    copy_tokenizer(o.model, saved);
  } else {
    tg::nn::save_adapter(saved, model, o.lora);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  Json m = {{"model", o.model},
            {"mode", o.full ? "full" : "lora"},
            {"options", o.identity()},
            {"parameters", total},
            {"trained_parameters", trained},
            {"train_tokens", corpus.train.size()},
            {"heldout_tokens", corpus.heldout.size()},
            {"heldout_loss_before", r.heldout_before},
            {"heldout_loss_after", after},
            {"losses", r.losses},
            {"prompt", o.prompt},
            {"sample", text},
            {"saved", saved},
            {"seconds", seconds}};
  tg::write_file_atomic((fs::path(o.out) / "metrics.json").string(), m.dump(2) + "\n");
  fmt::print("held-out loss {:.4f} -> {:.4f} nats/token; {} saved in {}\n", r.heldout_before, after,
             o.full ? "model" : "adapter", saved);
  fmt::print("sample: {}{}\n", o.prompt, text);
}

}  // namespace

int run(const std::vector<std::string>& args) {
  ArgParser a = make_parser();
  std::vector<const char*> argv{"finetune"};
  for (const std::string& s : args) argv.push_back(s.c_str());
  if (!a.parse(static_cast<int>(argv.size()), argv.data())) return 0;
  if (const int n = threads_option(a)) tg::set_num_threads(n);
  if (a.given("make-seeded")) return make_seeded(a);
  FinetuneOptions o = options(a);
  const auto t0 = std::chrono::steady_clock::now();
  claim_run_folder(o.out, o.resume, a.flag("overwrite"), own_files());
  recover_run_folder(o.out);
  Progress prog(a.flag("quiet") ? Progress::Mode::kQuiet : Progress::Mode::kAuto);
  const tg::nn::Tokenizer tok = tg::nn::Tokenizer::from_pretrained(o.model);
  auto model = tg::nn::hf::from_pretrained(o.model);
  if (o.block > model->max_positions())
    throw UserError(
        fmt::format("--block {}: the model has {} positions", o.block, model->max_positions()));
  const Corpus corpus = load_corpus(o.data, tok, o.block);
  prog.line(fmt::format("{}: {} items, {} bytes, {} training and {} held-out tokens", corpus.source,
                        corpus.items, corpus.bytes, corpus.train.size(), corpus.heldout.size()));
  const int64_t total = numel(model->parameters());
  // The LoRA initialisation, the batches and the dropout masks of this run (--resume restores
  // the generator's state of its checkpoint).
  tg::manual_seed(o.seed);
  const std::vector<tg::Tensor> params = prepare(*model, o);
  prog.line(fmt::format(
      "{}: {} parameters, {} trained ({})", o.model, total, numel(params),
      o.full ? "full" : fmt::format("LoRA r {} on {}", o.lora.r, o.lora.targets_str())));
  const RunResult r = train(*model, params, corpus, o, prog);
  if (!r.finished) {
    prog.line(
        fmt::format("stopped at step {} of {} (--max-steps); --resume continues", r.step, o.steps));
    return 0;
  }
  finish(*model, tok, corpus, o, r, total, numel(params), t0);
  return 0;
}

}  // namespace tgx::finetune
