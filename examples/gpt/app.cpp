// examples/gpt/app.cpp — the gpt program: options (each refused outside its range), the training
// run from corpus to report (split, vocabulary, n-gram baseline, training, samples, metrics.json,
// loss curve) and --sample from a saved run.
#include "gpt/app.hpp"

#include "autograd/io.hpp"
#include "common/cli.hpp"
#include "common/environment.hpp"
#include "common/progress.hpp"
#include "common/run_folder.hpp"
#include "common/text.hpp"
#include "gpt/data.hpp"
#include "gpt/ngram.hpp"
#include "gpt/report.hpp"
#include "gpt/sample.hpp"
#include "gpt/train.hpp"
#include "nn/dist/dist.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>

namespace tgx::gpt {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

ArgParser make_parser() {
  ArgParser p("gpt",
              "A character-level GPT trained on Debian's fortunes (whole files held out), beside "
              "an interpolated Kneser-Ney n-gram baseline; --sample generates text with a saved "
              "run.");
  p.option("data-dir", "", "folder of fortune files (default /usr/share/games/fortunes)")
      .option("arch", "gpt",
              "gpt (learned positions, LayerNorm, GELU) or llama (rotary, RMSNorm, SwiGLU, "
              "grouped-query attention, no biases)")
      .option("kv-heads", "0", "llama: key/value heads (0: --heads; must divide it)")
      .option("block", "32", "context length T (positions)")
      .option("d-model", "128", "model width C")
      .option("layers", "4", "Transformer blocks")
      .option("heads", "4", "attention heads (must divide --d-model)")
      .option("ff", "0", "feed-forward width (0: 4 x --d-model; llama: 8/3 x, a multiple of 8)")
      .option("dropout", "0", "dropout in [0, 1)")
      .option("window", "0", "attention window W: 0 full causal, W > 0 the last W keys (O(T·W))")
      .flag("tie-weights", "share the LM head's weight with the token embedding")
      .flag("checkpoint",
            "activation checkpointing: recompute each block's activations in backward (less "
            "memory, more time; the same numbers)")
      .option("batch-size", "128", "windows per step")
      .option("lr", "0.006", "peak learning rate (AdamW, linear warmup then cosine to 10 %)")
      .option("weight-decay", "0.1", "AdamW weight decay (matrices only)")
      .option("warmup", "100", "warmup steps")
      .option("steps", "1700", "training steps (the length of the schedule)")
      .option("max-steps", "0", "stop this run at that step (0: run to --steps; --resume goes on)")
      .option("eval-every", "250", "steps between evaluations and checkpoints")
      .option("eval-windows", "64", "windows of each fixed evaluation set (held-out and train)")
      .option("clip", "1.0", "gradient norm clipping (0: off)")
      .option("patience", "0", "stop after this many evaluations without a better held-out loss")
      .option("ngram-order", "5", "order of the Kneser-Ney baseline")
      .option("samples", "3", "samples generated with the best model at the end")
      .option("seed", "1", "seed of the split, initialisation, batches and samples")
      .option("threads", "0", "CPU threads (0: OMP_NUM_THREADS or all cores)")
      .option("device", "cpu", "where training runs: cpu, cuda or cuda:N")
      .option("out", "runs/gpt", "run folder (metrics.json, loss_curve.png, checkpoints)")
      .option("sample", "", "generate text after this prompt with the model in --out")
      .option("temperature", "0.8", "sampling temperature (> 0)")
      .option("top-k", "0", "sample among the k likeliest characters (0: all)")
      .option("length", "300", "characters to generate")
      .flag("no-kv-cache", "sample without the KV cache (recompute the context every step)")
      .flag("resume", "continue training from --out/last")
      .flag("overwrite", "start a new run in an --out that holds one (replaces its outputs)")
      .flag("quiet", "no progress output");
  precision_option(p);
  return p;
}

// The model's options, checked up front (before the corpus is read) by the config's own
// validation, which names the options.
GptConfig model_config(const ArgParser& a) {
  GptConfig c;
  c.arch = a.str("arch");
  c.block = a.integer("block");
  c.d_model = a.integer("d-model");
  c.layers = a.integer("layers");
  c.heads = a.integer("heads");
  const int64_t ff = int_option(a, "ff", 0, GptConfig::kMaxFF, "0: 4 x --d-model");
  // llama's SwiGLU has three matrices: 8/3 of the width keeps the GPT's parameter count (a
  // --d-model out of range is refused before ff is looked at: clamped here only to stay finite)
  const int64_t C = std::clamp<int64_t>(c.d_model, 0, GptConfig::kMaxDModel);
  c.ff = ff > 0 ? ff : c.arch == "llama" ? (8 * C / 3 + 7) / 8 * 8 : 4 * C;
  c.kv_heads = a.integer("kv-heads");
  c.window = a.integer("window");
  c.dropout = number_option(a, "dropout", 0, 1);
  if (c.dropout >= 1) throw UserError(fmt::format("--dropout {}: must be < 1", a.str("dropout")));
  c.tie_weights = a.flag("tie-weights");
  c.validate_options();
  return c;
}

TrainOptions train_options(const ArgParser& a) {
  TrainOptions o;
  o.steps = int_option(a, "steps", 1, 100000000);
  o.max_steps = int_option(a, "max-steps", 0, 100000000, "0: run to --steps");
  o.batch_size = int_option(a, "batch-size", 1, 65536);
  o.warmup = int_option(a, "warmup", 0, o.steps, "at most --steps");
  o.eval_every = int_option(a, "eval-every", 1, 100000000);
  o.eval_windows = int_option(a, "eval-windows", 1, 1000000);
  o.patience = int_option(a, "patience", 0, 1000000, "0: off");
  o.lr = positive_option(a, "lr", 10);
  o.weight_decay = number_option(a, "weight-decay", 0, 10);
  o.clip = number_option(a, "clip", 0, 1e6, "0: off");
  o.seed = static_cast<uint64_t>(int_option(a, "seed", 0));
  o.out = a.str("out");
  if (o.out.empty()) throw UserError("--out: must not be empty");
  o.resume = a.flag("resume");
  o.device = device_option(a.str("device"));
  o.precision = precision_of(a);
  return o;
}

SampleOptions sample_options(const ArgParser& a) {
  SampleOptions s;
  s.temperature = positive_option(a, "temperature", 100);
  s.top_k = int_option(a, "top-k", 0, 1000000, "0: off");
  s.length = int_option(a, "length", 0, 1000000);
  s.kv_cache = !a.flag("no-kv-cache");
  return s;
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct Baseline {
  double heldout = 0, windows = 0, seconds = 0;
  Json json;
};

Baseline ngram_baseline(const std::vector<int64_t>& train, const std::vector<int64_t>& held,
                        const std::vector<int64_t>& starts, int64_t T, int64_t vocab,
                        int64_t order) {
  const auto t0 = Clock::now();
  KneserNey::Options ko;
  ko.order = order;
  KneserNey kn(train, vocab, ko);
  Baseline b;
  b.heldout = kn.nats_per_char(held, 1);  // like the GPT: every character after the first
  b.windows = kn.nats_per_char_windows(held, starts, T);
  b.seconds = seconds_since(t0);
  std::vector<double> d;
  for (int64_t n = 1; n <= order; ++n) d.push_back(kn.discount(n));
  b.json = {{"name", fmt::format("interpolated Kneser-Ney, order {}", order)},
            {"order", order},
            {"discounts", d},
            {"heldout_nats_per_char", b.heldout},
            {"heldout_windows_nats_per_char", b.windows},
            {"seconds", b.seconds}};
  return b;
}

// The corpus, its split by file, the vocabulary of the training text and both texts encoded.
struct Data {
  size_t files = 0;
  Split split;
  CharVocab vocab;
  int64_t unk = 0;  // held-out characters unseen in training
  std::vector<int64_t> train_ids, held_ids;
  int64_t total() const { return split.train_chars + split.heldout_chars; }
};

Data load_data(const std::string& dir, uint64_t seed, Progress& prog) {
  Data d;
  std::vector<CorpusFile> files = load_corpus(dir);
  d.files = files.size();
  d.split = split_by_file(files, seed);
  d.vocab = CharVocab::build(d.split.train_text);
  d.train_ids = d.vocab.encode(d.split.train_text);
  d.held_ids = d.vocab.encode(d.split.heldout_text, &d.unk);
  const Split& split = d.split;
  prog.line(fmt::format(
      "fortunes: {} files, {} characters; held out {} files ({} characters, {:.1f} %): {}; "
      "vocabulary {} characters + <unk> ({} held-out characters unseen in training)",
      d.files, d.total(), split.heldout_files.size(), split.heldout_chars,
      100.0 * static_cast<double>(split.heldout_chars) / static_cast<double>(d.total()),
      fmt::join(split.heldout_files, ", "), d.vocab.size() - 1, d.unk));
  return d;
}

// The training options both the run's identity and metrics.json record.
Json options_json(const TrainOptions& to) {
  return {{"seed", to.seed},
          {"steps", to.steps},
          {"batch_size", to.batch_size},
          {"lr", to.lr},
          {"weight_decay", to.weight_decay},
          {"warmup", to.warmup},
          {"clip", to.clip},
          {"eval_windows", to.eval_windows}};
}

// What a resumed run must match (train's `identity`).
Json identity_json(const GptConfig& cfg, const TrainOptions& to, const Data& d) {
  Json j = options_json(to);
  j["world_size"] = tg::dist::world_size();
  j["train_files"] = d.split.train_files;
  j["model"] = cfg.to_json();
  j["vocab"] = d.vocab.to_json();
  return j;
}

std::string model_line(const GptConfig& cfg, const Gpt& model, const TrainOptions& to,
                       int threads) {
  return fmt::format(
      "model: {} {} parameters ({} blocks, d_model {}, {} heads{}, T {}{}{}); {} "
      "steps of {} windows{}; {} threads on {}",
      cfg.arch, model.num_parameters(), cfg.layers, cfg.d_model, cfg.heads,
      cfg.kv_heads > 0 ? fmt::format(" / {} kv", cfg.kv_heads) : "", cfg.block,
      cfg.window > 0 ? fmt::format(", window {}", cfg.window) : "",
      cfg.tie_weights ? ", tied head" : "", to.steps, to.batch_size,
      tg::dist::world_size() > 1 ? fmt::format(" on each of {} ranks", tg::dist::world_size()) : "",
      threads, to.device.str());
}

// metrics.json but for the parameter count and the samples.
Json metrics_json(const GptConfig& cfg, const TrainOptions& to, int threads, const Data& d,
                  const TrainResult& r, double heldout, double eval_s, const Baseline& base,
                  double total_s) {
  const Split& split = d.split;
  const Json split_json = {{"seed", to.seed},
                           {"train_files", split.train_files},
                           {"heldout_files", split.heldout_files},
                           {"train_chars", split.train_chars},
                           {"heldout_chars", split.heldout_chars},
                           {"heldout_fraction", static_cast<double>(split.heldout_chars) /
                                                    static_cast<double>(d.total())},
                           {"heldout_unknown_chars", d.unk},
                           {"vocab_size", d.vocab.size()}};
  Json training = options_json(to);
  training["eval_every"] = to.eval_every;
  training["device"] = to.device.str();
  training["threads"] = threads;
  training["precision"] = precision_name(to.precision);  // not in the identity: see train.hpp
  return {{"config", cfg.to_json()},
          {"precision", precision_name(to.precision)},
          {"skipped_steps", r.skipped_steps},
          {"training", training},
          {"split", split_json},
          {"steps_done", r.step},
          {"early_stopped", r.early_stopped},
          {"history", r.history.to_json()},
          {"best_step", r.best_step},
          {"best_heldout_windows_nats_per_char", r.best_heldout},
          {"heldout_nats_per_char", heldout},
          {"heldout_eval_seconds", eval_s},
          {"final_train_loss", r.history.loss.empty() ? NAN : r.history.loss.back()},
          {"baseline", base.json},
          {"baseline_heldout_nats_per_char", base.heldout},
          {"beats_baseline", heldout < base.heldout},
          {"train_seconds", r.seconds},
          {"total_seconds", total_s},
          {"environment", tgx::run_environment()}};
}

// The n-gram baseline (rank 0's; the other ranks report an unnamed one), printed.
Baseline rank0_baseline(const Data& d, const GptConfig& cfg, const TrainOptions& to, int64_t order,
                        Progress& prog) {
  const std::vector<int64_t> held_starts =
      eval_starts(static_cast<int64_t>(d.held_ids.size()), cfg.block, to.eval_windows, to.seed);
  Baseline base;
  if (tg::dist::rank() == 0)
    base = ngram_baseline(d.train_ids, d.held_ids, held_starts, cfg.block, d.vocab.size(), order);
  else
    base.json = {{"name", ""}};
  prog.line(fmt::format(
      "baseline: {}: held-out {:.4f} nats/char (on the evaluation windows {:.4f}) [{:.1f}s]",
      base.json["name"].get<std::string>(), base.heldout, base.windows, base.seconds));
  return base;
}

// n samples from the fortune start, drawn from the global generator.
std::vector<std::string> draw_samples(Gpt& model, const CharVocab& vocab, const SampleOptions& so,
                                      int64_t n) {
  std::vector<std::string> samples;
  for (int64_t i = 0; i < n; ++i)
    samples.push_back(vocab.decode(generate(model, vocab.encode(kFortuneStart), so)));
  return samples;
}

int train_mode(const ArgParser& a) {
  const auto t_start = Clock::now();
  const int rank = tg::dist::rank();  // rank 0 of a data-parallel run prints and writes
  const bool quiet = a.flag("quiet") || rank != 0;
  GptConfig cfg = model_config(a);
  TrainOptions to = train_options(a);
  const int64_t n_samples = int_option(a, "samples", 0, 100);
  const int64_t order = int_option(a, "ngram-order", 1, 8);
  SampleOptions so = sample_options(a);
  so.length = a.given("length") ? so.length : 200;
  require_writable(to.out + "/metrics.json", "--out");
  if (rank == 0) {
    std::vector<std::string> own = common_run_files();
    for (const char* f : {"loss_curve.png", "samples.txt"}) own.push_back(f);
    claim_run_folder(to.out, to.resume, a.flag("overwrite"), own);
  }
  Progress prog(quiet ? Progress::Mode::kQuiet : Progress::Mode::kAuto);
  const Data data = load_data(a.str("data-dir"), to.seed, prog);
  const CharVocab& vocab = data.vocab;
  const std::vector<int64_t>&train_ids = data.train_ids, &held_ids = data.held_ids;
  cfg.vocab_size = vocab.size();
  cfg.validate();

  const Baseline base = rank0_baseline(data, cfg, to, order, prog);

  const int threads = tg::get_num_threads();
  tg::manual_seed(to.seed);
  Gpt model(cfg);
  model.checkpoint_activations = a.flag("checkpoint");
  prog.line(model_line(cfg, model, to, threads));
  TrainResult r = train(model, train_ids, held_ids, vocab, to, identity_json(cfg, to, data), prog);
  if (rank != 0) return 0;

  // The best model on the whole held-out text, its samples and the report.
  SavedModel best = load_best(to.out);
  const auto t_eval = Clock::now();
  best.model->to(to.device);
  double heldout = 0;
  {
    PrecisionScope autocast(to.precision);  // measured in the precision it was trained in
    heldout = evaluate_text(*best.model, held_ids, to.batch_size, to.device);
  }
  best.model->to(tg::kCPU);
  const double eval_s = seconds_since(t_eval);
  tg::manual_seed(to.seed);
  const std::vector<std::string> samples = draw_samples(*best.model, vocab, so, n_samples);
  const std::string header = fmt::format("step {}, temperature {}, top-k {}, seed {}", best.step,
                                         so.temperature, so.top_k, to.seed);
  write_samples(to.out + "/samples.txt", samples, header);
  write_loss_curve(to.out + "/loss_curve.png", r.history, base.windows,  // like for like
                   heldout, base.heldout);
  const double total_s = seconds_since(t_start);
  Json m = metrics_json(cfg, to, threads, data, r, heldout, eval_s, base, total_s);
  m["parameters"] = model.num_parameters();
  m["samples"] = samples;
  m["samples_settings"] = header;
  tg::write_file_atomic(to.out + "/metrics.json", m.dump(2) + "\n");
  fmt::print(
      "held-out text ({} characters): gpt {:.4f} nats/char (best/, step {}) vs {} {:.4f} "
      "({:+.4f}); {} parameters, {:.0f}s training, {:.0f}s in all\n",
      held_ids.size(), heldout, r.best_step, base.json["name"].get<std::string>(), base.heldout,
      heldout - base.heldout, model.num_parameters(), r.seconds, total_s);
  if (!quiet && !samples.empty()) fmt::print("sample 1:\n{}\n", samples.front());
  fmt::print(
      "wrote {0}/metrics.json, {0}/loss_curve.png, {0}/samples.txt; checkpoints {0}/best "
      "and {0}/last\n",
      to.out);
  return 0;
}

int sample_mode(const ArgParser& a) {
  SampleOptions so = sample_options(a);
  const uint64_t seed = static_cast<uint64_t>(int_option(a, "seed", 0));
  SavedModel s = load_best(a.str("out"));
  const std::string prompt = a.str("sample");
  std::vector<int64_t> ctx =
      prompt.empty() ? s.vocab.encode(kFortuneStart) : s.vocab.encode_strict(prompt, "--sample");
  tg::manual_seed(seed);
  fmt::print("{}{}\n", prompt, s.vocab.decode(generate(*s.model, ctx, so)));
  return 0;
}

}  // namespace

int run(const std::vector<std::string>& args) {
  ArgParser a = make_parser();
  std::vector<const char*> argv = {"gpt"};
  for (const std::string& s : args) argv.push_back(s.c_str());
  if (!a.parse(static_cast<int>(argv.size()), argv.data())) return 0;
  const int threads = threads_option(a);
  if (threads > 0) tg::set_num_threads(threads);
  if (a.given("sample")) {  // inference: no training options, one process
    refuse_unused(a, "--sample",
                  {"sample", "out", "temperature", "top-k", "length", "seed", "no-kv-cache"});
    return inference_elsewhere() ? 0 : sample_mode(a);
  }
  // Started by mpirun -np N: N data-parallel ranks (tg::dist), each with its share of the cores.
  if (tg::dist::launched_by_mpirun()) tg::dist::init();
  require_same_options_on_every_rank(a);  // one run: every rank with the same options
  if (threads == 0 && tg::dist::local_world_size() > 1)
    tg::set_num_threads(std::max(1, tg::get_num_threads() / tg::dist::local_world_size()));
  return train_mode(a);
}

}  // namespace tgx::gpt
