// examples/translation/app.cpp — the translation program: options, training runs with their
// final held-out report (greedy and beam exact match, chrF, a copy-the-source baseline for
// freedict), metrics JSON, pictures, and --translate from a saved checkpoint.
#include "translation/app.hpp"

#include "nn/dist/dist.hpp"

#include "autograd/io.hpp"
#include "common/cli.hpp"
#include "common/environment.hpp"
#include "common/guard.hpp"
#include "common/metrics.hpp"
#include "common/precision.hpp"
#include "common/progress.hpp"
#include "common/run_folder.hpp"
#include "common/text.hpp"
#include "nn/checkpoint.hpp"
#include "translation/data.hpp"
#include "translation/plots.hpp"
#include "translation/train.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <filesystem>

namespace tgx::translation {

namespace {

ArgParser make_parser() {
  ArgParser p("translation",
              "Encoder-decoder Transformer translating English number words to French (or "
              "English words to French with --dataset freedict-eng-fra).");
  p.option("dataset", "numbers", "numbers | freedict-eng-fra")
      .option("data-dir", "/usr/share/dictd", "where freedict-eng-fra.index/.dict.dz live")
      .option("steps", "600", "training steps, the length of the LR schedule (freedict: 2000)")
      .option("max-steps", "0", "stop this run after this many steps (0: run to --steps)")
      .option("time-limit", "0", "stop training after this many minutes (0: no limit)")
      .option("batch-size", "128", "sentence pairs per step")
      .option("lr", "0.001", "peak learning rate (AdamW, warmup then cosine)")
      .option("warmup", "100", "warmup steps")
      .option("weight-decay", "0.01", "AdamW weight decay (matrices only)")
      .option("clip", "1.0", "gradient norm clipping (0: off)")
      .option("label-smoothing", "0.1", "cross-entropy label smoothing")
      .option("d-model", "128", "model width")
      .option("layers", "2", "encoder layers and decoder layers (each)")
      .option("heads", "4", "attention heads")
      .option("ff", "256", "feed-forward width")
      .option("dropout", "0", "dropout (freedict: 0.2)")
      .option("seed", "1", "seed for data, initialisation and batches")
      .option("train-size", "200000", "numbers task: training pairs")
      .option("heldout-size", "2000", "numbers task: held-out numbers (final report only)")
      .option("valid-size", "500", "validation sentences decoded at each validation")
      .option("eval-every", "100", "steps between validations and checkpoints")
      .option("patience", "3",
              "stop after this many validations without a better exact match (0: off)")
      .option("beam", "4", "beam size for the final report and --translate (1: greedy)")
      .option("length-penalty", "1.0", "beam score = log-probability / length^this")
      .option("threads", "0", "CPU threads per process (0: OMP_NUM_THREADS or all cores)")
      .option("device", "cpu", "where training steps run: cpu, cuda or cuda:N")
      .option("out", "runs/translation", "output directory (checkpoints, pictures)")
      .option("metrics-out", "", "write the final metrics as JSON to this file")
      .option("translate", "", "translate this sentence with the checkpoint in --out")
      .flag("resume", "continue training from --out/last")
      .flag("overwrite", "start a new run in an --out that holds one (replaces its outputs)")
      .flag("quiet", "no progress output");
  precision_option(p);
  return p;
}

Dataset load_dataset(const ArgParser& a) {
  std::string name = a.str("dataset");
  uint64_t seed = static_cast<uint64_t>(int_option(a, "seed", 0));
  if (name == "numbers") {
    NumbersOptions o;
    o.seed = seed;
    o.train_size = int_option(a, "train-size", 1, 10000000);
    o.heldout_size = int_option(a, "heldout-size", 1, 99000);
    o.valid_size = std::max<int64_t>(1000, int_option(a, "valid-size", 1, 99000));
    return make_numbers_dataset(o);
  }
  if (name == "freedict-eng-fra") {
    FreedictOptions o;
    o.dir = a.str("data-dir");
    o.seed = seed;
    return make_freedict_dataset(o);
  }
  throw UserError(fmt::format("--dataset must be numbers or freedict-eng-fra (got '{}')", name));
}

ModelConfig model_config(const ArgParser& a, const std::string& dataset, const Vocabs& v,
                         int64_t longest) {
  ModelConfig c;
  c.dataset = dataset;
  c.src_vocab = v.src.size();
  c.tgt_vocab = v.tgt.size();
  c.d_model = int_option(a, "d-model", 2, 8192);
  c.heads = int_option(a, "heads", 1, 256);
  c.enc_layers = c.dec_layers = int_option(a, "layers", 1, 64);
  c.ff = int_option(a, "ff", 1, 65536);
  c.dropout = number_option(a, "dropout", 0, 0.999);
  // The dictionary task is small and noisy: without dropout it overfits (below the copy baseline).
  if (a.str("dataset") == "freedict-eng-fra" && !a.given("dropout")) c.dropout = 0.2;
  c.max_len = longest + 8;
  c.validate();
  return c;
}

TrainOptions train_options(const ArgParser& a) {
  TrainOptions o;
  o.steps = int_option(a, "steps", 1, 100000000);
  if (a.str("dataset") == "freedict-eng-fra" && !a.given("steps")) o.steps = 2000;
  o.max_steps = int_option(a, "max-steps", 0, 100000000, "0: run to --steps");  // step + this
  o.time_limit_s = number_option(a, "time-limit", 0, INFINITY, "0: no limit") * 60.0;
  o.batch_size = int_option(a, "batch-size", 1, 65536);
  o.lr = positive_option(a, "lr", 10);
  o.warmup = int_option(a, "warmup", 0);
  o.weight_decay = number_option(a, "weight-decay", 0, 10);
  o.clip = number_option(a, "clip", 0, INFINITY, "0: no clipping");
  o.label_smoothing = number_option(a, "label-smoothing", 0, 0.999);
  o.eval_every = int_option(a, "eval-every", 1);
  o.patience = int_option(a, "patience", 0, std::numeric_limits<int64_t>::max(), "0: off");
  o.valid_subset = int_option(a, "valid-size", 1, 99000);
  o.seed = static_cast<uint64_t>(int_option(a, "seed", 0));
  o.out_dir = a.str("out");
  o.resume = a.flag("resume");
  o.overwrite = a.flag("overwrite");
  o.device = device_option(a.str("device"));
  o.precision = precision_of(a);
  if (o.out_dir.empty()) throw UserError("--out: must not be empty");
  return o;
}

void print(bool quiet, const std::string& s) {
  if (!quiet) fmt::print("{}\n", s);
}

// metrics.json: the run, the best validation and the held-out scores (greedy, beam).
nlohmann::json metrics_json(const ArgParser& a, const TrainOptions& to, const ModelConfig& cfg,
                            const Dataset& d, const TrainLog& log, const Seq2Seq& model,
                            int64_t beam, const EvalResult& greedy, const EvalResult& bs) {
  return {{"dataset", d.name},
          {"seed", a.integer("seed")},
          {"precision", precision_name(to.precision)},
          {"skipped_steps", log.skipped_steps},
          {"steps", to.steps},
          {"steps_done", log.final_step},
          {"train_seconds", log.seconds},
          {"parameters", model.num_parameters()},
          {"environment", tgx::run_environment()},
          {"config", nlohmann::json::parse(cfg.to_json())},
          {"train_pairs", d.train.size()},
          {"heldout_pairs", d.heldout.size()},
          {"best_valid_exact_match", log.best_valid},
          {"best_step", log.best_step},
          {"early_stopped", log.early_stopped},
          {"beam", beam},
          {"heldout_exact_match", beam > 1 ? bs.exact_match : greedy.exact_match},
          {"heldout_exact_match_greedy", greedy.exact_match},
          {"heldout_exact_match_beam", bs.exact_match},
          {"heldout_chrf_greedy", greedy.chrf},
          {"heldout_chrf_beam", bs.chrf},
          {"eval_seconds_greedy", greedy.seconds},
          {"eval_seconds_beam", bs.seconds}};
}

// The copy-the-source baseline of a character-level set, into m and printed.
void add_copy_baseline(nlohmann::json& m, const Dataset& d, const EvalResult& greedy) {
  std::vector<std::string> copy;
  for (const Example& e : d.heldout) copy.push_back(e.src_text);
  int64_t exact = 0;
  for (size_t i = 0; i < copy.size(); ++i) exact += copy[i] == d.heldout[i].tgt_text;
  m["baseline_copy_exact_match"] = 100.0 * exact / static_cast<double>(copy.size());
  m["baseline_copy_chrf"] = chrf(copy, greedy.references);
  print(false, fmt::format("copy-the-source baseline: exact match {:.2f}%, chrF {:.2f}",
                           m["baseline_copy_exact_match"].get<double>(),
                           m["baseline_copy_chrf"].get<double>()));
}

int train_mode(const ArgParser& a) {
  bool quiet = a.flag("quiet") || tg::dist::rank() != 0;  // rank 0 of a data-parallel run prints
  // Every option is checked before the data is made (--d-model and friends again below, with
  // the vocabularies, through the same calls).
  TrainOptions to = train_options(a);
  model_config(a, a.str("dataset"), Vocabs{}, 0);
  if (!a.str("metrics-out").empty()) require_writable(a.str("metrics-out"), "--metrics-out");
  int64_t beam = int_option(a, "beam", 1, 64, "1: greedy");
  double lp = number_option(a, "length-penalty", 0, 10);
  if (tg::dist::rank() == 0) {
    std::vector<std::string> own = common_run_files();
    for (const char* dir : {"last", "last.new", "last.old", "best"})
      for (const char* f : {"vocab.json", "history.json"})
        own.push_back(std::string(dir) + "/" + f);
    for (const char* f : {"loss.png", "validation.png"}) own.push_back(f);
    claim_run_folder(to.out_dir, to.resume, to.overwrite, own);
  }
  tg::manual_seed(to.seed);
  Dataset d = load_dataset(a);
  Vocabs v = Vocabs::build(d);
  ModelConfig cfg = model_config(a, d.name, v, longest_sequence(d));
  Seq2Seq model(cfg);
  print(quiet, fmt::format("{}: {} train / {} validation / {} held-out pairs; vocabularies {} / "
                           "{}; model {} parameters",
                           d.name, d.train.size(), d.valid.size(), d.heldout.size(), v.src.size(),
                           v.tgt.size(), model.num_parameters()));
  Progress progress(quiet || tg::dist::rank() != 0 ? Progress::Mode::kQuiet
                                                   : Progress::Mode::kAuto);
  TrainLog log = train(model, d, v, to, progress);
  if (tg::dist::rank() != 0) return 0;  // rank 0 reports

  // The final report uses the best validation model.
  std::string best = best_dir(to.out_dir) + "/model.safetensors";
  check_saved_model(best, cfg, v);
  tg::nn::load_model(best, model);
  EvalResult greedy, bs;
  {
    PrecisionScope autocast(to.precision);  // held-out decoding in the run's precision
    greedy = evaluate(model, d.heldout, v, 1);
    bs = beam > 1 ? evaluate(model, d.heldout, v, beam, lp) : greedy;
  }
  print(false, fmt::format("held-out ({} pairs): exact match greedy {:.2f}% ({:.1f}s), beam {} "
                           "{:.2f}% ({:.1f}s); chrF greedy {:.2f}, beam {:.2f}",
                           d.heldout.size(), greedy.exact_match, greedy.seconds, beam,
                           bs.exact_match, bs.seconds, greedy.chrf, bs.chrf));
  nlohmann::json m = metrics_json(a, to, cfg, d, log, model, beam, greedy, bs);
  if (d.level == Level::Char) add_copy_baseline(m, d, greedy);
  for (size_t i = 0; i < std::min<size_t>(5, d.heldout.size()); ++i)
    print(false, fmt::format("  {} -> {}{}", d.heldout[i].src_text, bs.hypotheses[i],
                             bs.hypotheses[i] == d.heldout[i].tgt_text
                                 ? ""
                                 : fmt::format("   (want {})", d.heldout[i].tgt_text)));
  std::vector<std::string> pics = write_curves(log, to.out_dir);
  const Example& ex = d.heldout.front();
  auto out = translate_tokens(model, v, ex.src, beam, lp);
  auto att = write_attention(model, v, ex.src, out, to.out_dir + "/attention");
  print(quiet, fmt::format("wrote {} and {} attention maps in {}/attention (for \"{}\")",
                           fmt::join(pics, ", "), att.size(), to.out_dir, ex.src_text));
  tg::write_file_atomic(to.out_dir + "/metrics.json", m.dump(2) + "\n");
  if (a.given("metrics-out") && !a.str("metrics-out").empty())
    tg::write_file_atomic(a.str("metrics-out"), m.dump(2) + "\n");
  print(false, fmt::format("metrics: {}/metrics.json{}", to.out_dir,
                           a.str("metrics-out").empty() ? "" : ", " + a.str("metrics-out")));
  return 0;
}

int translate_mode(const ArgParser& a) {
  std::string text = a.str("translate");
  std::string dir = best_dir(a.str("out"));
  if (!file_exists(dir + "/model.safetensors")) dir = checkpoint_dir(a.str("out"));
  std::string model_path = dir + "/model.safetensors";
  if (!file_exists(model_path))
    throw UserError(fmt::format("--translate: no checkpoint in {} (train first with --out {})",
                                a.str("out"), a.str("out")));
  Vocabs v = Vocabs::from_json(read_file(dir + "/vocab.json"), dir + "/vocab.json");
  tg::nn::SafetensorsFile f;
  try {
    f = tg::nn::load_safetensors(model_path);
  } catch (const tg::Error& e) {
    throw UserError(fmt::format("cannot read checkpoint: {}", e.what()));
  }
  if (!f.metadata.count("translation.config"))
    throw UserError(model_path + ": not a translation checkpoint (no translation.config)");
  ModelConfig cfg = ModelConfig::from_json(f.metadata.at("translation.config"), model_path);
  check_saved_model(model_path, cfg, v);  // vocab.json must be the one the model was trained with
  Seq2Seq model(cfg);
  try {
    model.load_state_dict(f.tensors);
  } catch (const tg::Error& e) {
    throw UserError(fmt::format("{}: {}", model_path, e.what()));
  }
  require_finite_weights(model, model_path, "refusing to translate with it");
  require_utf8(text, "--translate");
  std::string input = v.level == Level::Word ? to_lower_ascii(squeeze_spaces(text)) : trim(text);
  std::vector<std::string> src = tokenize(input, v.level);
  if (src.empty()) throw UserError("--translate: the sentence is empty");
  auto out = translate_tokens(model, v, src, int_option(a, "beam", 1, 64, "1: greedy"),
                              number_option(a, "length-penalty", 0, 10));
  fmt::print("{}\n", detokenize(out, v.level));
  auto att = write_attention(model, v, src, out, a.str("out") + "/translate");
  if (!a.flag("quiet"))
    fmt::print(stderr, "cross-attention: {} (and {} per-layer/head maps)\n", att.front(),
               att.size() - 1);
  return 0;
}

}  // namespace

int run(const std::vector<std::string>& args) {
  ArgParser a = make_parser();
  std::vector<const char*> argv = {"translation"};
  for (const std::string& s : args) argv.push_back(s.c_str());
  if (!a.parse(static_cast<int>(argv.size()), argv.data())) return 0;
  const int threads = threads_option(a);
  if (threads > 0) tg::set_num_threads(threads);
  if (a.given("translate")) {  // inference: no training options, one process
    refuse_unused(a, "--translate", {"translate", "out", "beam", "length-penalty"});
    return inference_elsewhere() ? 0 : translate_mode(a);
  }
  // Started by mpirun -np N: N data-parallel ranks (tg::dist); --threads is per rank.
  if (tg::dist::launched_by_mpirun()) tg::dist::init();
  require_same_options_on_every_rank(a);  // one run: every rank with the same options
  return train_mode(a);
}

}  // namespace tgx::translation
