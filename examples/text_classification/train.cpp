// examples/text_classification/train.cpp — the training run (data, tokenizer, baseline, loop,
// validation, checkpoints, resume, test evaluation) and prediction from a saved run. See
// train.hpp for the folder layout and report.hpp for what is written at the end.
#include "text_classification/train.hpp"

#include "autograd/io.hpp"
#include "autograd/tape.hpp"
#include "common/cli.hpp"
#include "common/environment.hpp"
#include "common/guard.hpp"
#include "common/metrics.hpp"
#include "common/progress.hpp"
#include "common/run_folder.hpp"
#include "common/text.hpp"
#include "nn/checkpoint.hpp"
#include "nn/checkpoint_distributed.hpp"
#include "nn/ddp.hpp"
#include "nn/dist/dist.hpp"
#include "nn/clip.hpp"
#include "nn/optim.hpp"
#include "nn/schedule.hpp"
#include "ops/ops.hpp"
#include "text_classification/bpe.hpp"
#include "text_classification/data.hpp"
#include "text_classification/naive_bayes.hpp"
#include "text_classification/report.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>

namespace tgx::cls {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using Json = nlohmann::json;

constexpr int64_t kBpeChars = 4000;  // the tokenizer learns from each text's first 4000 bytes

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The first n bytes of s, cut at a character boundary.
std::string utf8_prefix(const std::string& s, size_t n) {
  if (s.size() <= n) return s;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}

struct Data {
  Dataset ds;
  Split split;
  Bpe bpe;
  std::vector<std::vector<int64_t>> tokens;  // per example, at most max_len ids (never empty)
  std::vector<int64_t> labels;
};

Data prepare(const RunOptions& o) {
  Data d;
  d.ds = load_dataset(o.dataset, o.data_dir, o.headers);
  limit_examples(d.ds, o.limit, o.data_seed());
  for (const Example& e : d.ds.examples) d.labels.push_back(e.label);
  const int64_t C = static_cast<int64_t>(d.ds.class_names.size());
  d.split = stratified_split(d.labels, C, o.data_seed());
  if (d.split.train.empty() || d.split.val.empty() || d.split.test.empty())
    throw UserError(fmt::format(
        "{}: {} examples are too few for a train/validation/test split (need >= 3 per class)",
        o.dataset, d.ds.examples.size()));
  const std::string tok_path = o.out + "/tokenizer.json";
  if (o.resume && file_exists(tok_path)) {
    d.bpe = Bpe::load(tok_path);
  } else {
    std::vector<std::string> texts;
    for (int64_t i : d.split.train) texts.push_back(utf8_prefix(d.ds.examples[i].text, kBpeChars));
    Bpe::Options bo;
    bo.vocab_size = o.vocab_size;
    d.bpe = Bpe::train(texts, bo);  // every rank trains the same one; rank 0 writes it
    if (tg::dist::rank() == 0) d.bpe.save(tok_path);
  }
  for (const Example& e : d.ds.examples) {
    d.tokens.push_back(d.bpe.encode_head_tail(e.text, o.model.max_len, o.model.tail));
    if (d.tokens.back().empty()) d.tokens.back().push_back(Bpe::kUnk);
  }
  return d;
}

struct Batch {
  tg::Tensor ids, pad, labels;  // (B, T) int64, (B, T) bool, (B) int64
};

// Examples idx[begin:end], padded to the longest of them.
Batch make_batch(const Data& d, const std::vector<int64_t>& idx, size_t begin, size_t end,
                 tg::Device dev) {
  const int64_t B = static_cast<int64_t>(end - begin);
  int64_t T = 1;
  for (size_t i = begin; i < end; ++i)
    T = std::max<int64_t>(T, static_cast<int64_t>(d.tokens[idx[i]].size()));
  std::vector<int64_t> ids(B * T, Bpe::kPad), y(B);
  std::vector<bool> pad(B * T, true);
  for (int64_t b = 0; b < B; ++b) {
    const auto& t = d.tokens[idx[begin + b]];
    for (size_t j = 0; j < t.size(); ++j) {
      ids[b * T + j] = t[j];
      pad[b * T + j] = false;
    }
    y[b] = d.labels[idx[begin + b]];
  }
  return {tg::tensor(ids, {B, T}).to(dev), tg::tensor(pad, {B, T}).to(dev),
          tg::tensor(y, {B}).to(dev)};
}

struct Eval {
  double loss = 0;
  ConfusionMatrix cm;
};

Eval evaluate(TextClassifier& m, const Data& d, const std::vector<int64_t>& idx, tg::Device dev,
              Precision precision) {
  tg::NoGradGuard ng;
  PrecisionScope autocast(precision);
  m.eval();
  Eval ev{0, ConfusionMatrix(d.ds.class_names)};
  tg::CrossEntropyOptions sum;
  sum.reduction = tg::Reduction::Sum;
  for (size_t i = 0; i < idx.size(); i += 64) {
    Batch b = make_batch(d, idx, i, std::min(idx.size(), i + 64), dev);
    tg::Tensor logits = m.forward(b.ids, b.pad);
    ev.loss += tg::cross_entropy(logits, b.labels, sum).item<double>();
    std::vector<int64_t> pred = tg::argmax(logits, 1).to_vector<int64_t>();
    std::vector<int64_t> y = b.labels.to_vector<int64_t>();
    for (size_t k = 0; k < y.size(); ++k) ev.cm.add(y[k], pred[k]);
  }
  ev.loss /= static_cast<double>(std::max<size_t>(1, idx.size()));
  m.train();
  return ev;
}

ConfusionMatrix naive_bayes_baseline(const Data& d) {
  NaiveBayes nb(static_cast<int64_t>(d.ds.class_names.size()));
  std::vector<std::vector<std::string>> docs;
  std::vector<int64_t> y;
  for (int64_t i : d.split.train) {
    docs.push_back(Bpe::pretokenize(d.ds.examples[i].text));
    y.push_back(d.labels[i]);
  }
  nb.fit(docs, y);
  ConfusionMatrix cm(d.ds.class_names);
  for (int64_t i : d.split.test)
    cm.add(d.labels[i], nb.predict(Bpe::pretokenize(d.ds.examples[i].text)));
  return cm;
}

// What identifies a run: resuming with other values would silently train something else.
Json run_identity(const RunOptions& o, const Data& d, const ModelConfig& cfg) {
  return {{"dataset", o.dataset},
          {"seed", o.seed},
          {"split_seed", o.data_seed()},
          {"limit", o.limit},
          {"epochs", o.epochs},
          {"batch_size", o.batch_size},
          {"world_size", tg::dist::world_size()},
          {"headers", o.headers},
          {"lr", o.lr},
          {"classes", d.ds.class_names},
          {"tokenizer", d.bpe.fingerprint()},
          {"model", cfg.to_json()}};
}

// Reads a metadata entry that must hold JSON; UserError naming the file otherwise.
Json meta_json(const tg::nn::Metadata& m, const std::string& key, const std::string& what) {
  auto it = m.find(key);
  Json j = it == m.end() ? Json() : Json::parse(it->second, nullptr, false);
  if (it == m.end() || j.is_discarded())
    throw UserError(
        fmt::format("{}: not a checkpoint of this program (no valid '{}' metadata)", what, key));
  return j;
}

// Throws UserError listing every difference between a saved run and this one.
void check_same_run(const Json& saved, const Json& now, const std::string& what) {
  std::vector<std::string> diffs;
  for (auto it = now.begin(); it != now.end(); ++it) {
    if (it.key() == "model") continue;
    if (!saved.contains(it.key()) || saved[it.key()] != it.value())
      diffs.push_back(fmt::format("{}: checkpoint {}, options {}", it.key(),
                                  saved.contains(it.key()) ? saved[it.key()].dump() : "none",
                                  it.value().dump()));
  }
  ModelConfig have = ModelConfig::from_json(saved.value("model", Json()), what);
  ModelConfig want = ModelConfig::from_json(now["model"], what);
  std::string md = have.diff(want);
  if (!md.empty()) diffs.push_back("model (checkpoint vs options): " + md);
  if (!diffs.empty())
    throw UserError(fmt::format(
        "{}: the checkpoint is from another model, vocabulary or run ({}); use the same options "
        "or another --out folder",
        what, fmt::join(diffs, "; ")));
}

struct TrainState {
  int64_t epoch = 0, step_in_epoch = 0, global_step = 0, best_epoch = -1, bad_epochs = 0;
  double best_acc = -1, best_loss = std::numeric_limits<double>::infinity(), seconds = 0;
  History hist;
  const MixedPrecision* mp = nullptr;  // its precision, skipped steps and loss scale are saved

  tg::nn::Metadata to_meta(const Json& identity) const {
    Json s = {{"epoch", epoch},
              {"step_in_epoch", step_in_epoch},
              {"global_step", global_step},
              {"best_epoch", best_epoch},
              {"bad_epochs", bad_epochs},
              {"best_acc", best_acc},
              {"best_loss", std::isfinite(best_loss) ? best_loss : 1e300},
              {"seconds", seconds}};
    tg::nn::Metadata m = {{"cls.run", identity.dump()},
                          {"cls.state", s.dump()},
                          {"cls.history", hist.to_json().dump()}};
    if (mp) m.merge(mp->metadata());
    return m;
  }
  void from_meta(const tg::nn::Metadata& m, const std::string& what) {
    Json s = meta_json(m, "cls.state", what);
    epoch = s.value("epoch", int64_t{0});
    step_in_epoch = s.value("step_in_epoch", int64_t{0});
    global_step = s.value("global_step", int64_t{0});
    best_epoch = s.value("best_epoch", int64_t{-1});
    bad_epochs = s.value("bad_epochs", int64_t{0});
    best_acc = s.value("best_acc", -1.0);
    best_loss = s.value("best_loss", 1e300);
    seconds = s.value("seconds", 0.0);
    hist = History::from_json(meta_json(m, "cls.history", what));
  }
};

// Writes <out>/last through a fresh folder swapped in (common/run_folder.hpp).
void save_last(const RunOptions& o, TextClassifier& model, tg::nn::Optimizer& opt,
               tg::nn::LRScheduler& sched, const TrainState& st, const Json& identity) {
  tgx::save_last(o.out, [&](const std::string& dir) {
    tg::nn::save_checkpoint_distributed(dir, model, opt, &sched, st.global_step,
                                        st.to_meta(identity));
  });
}

void save_best(const RunOptions& o, TextClassifier& model, const Json& identity, double val_acc) {
  if (tg::dist::rank() != 0) return;
  fs::create_directories(o.out + "/best");
  tg::nn::save_safetensors(
      o.out + "/best/model.safetensors", model.state_dict(),
      {{"cls.run", identity.dump()}, {"cls.val_acc", fmt::format("{}", val_acc)}});
}

// The parameters that get weight decay: matrices of the attention and feed-forward layers and the
// head (not embeddings, norms or biases).
std::vector<tg::nn::ParamGroup> param_groups(TextClassifier& m) {
  std::vector<tg::Tensor> decay, no_decay;
  for (auto& [name, p] : m.named_parameters()) {
    bool is_emb = name.rfind("tok_emb", 0) == 0 || name.rfind("pos_emb", 0) == 0;
    (p.dim() >= 2 && !is_emb ? decay : no_decay).push_back(p);
  }
  return {tg::nn::ParamGroup(decay), tg::nn::ParamGroup(no_decay, {{"weight_decay", 0.0}})};
}

// The training loop's state and steps: one epoch at a time, then validation and checkpoints.
struct Loop {
  const RunOptions& o;
  const Data& d;
  TextClassifier& model;
  tg::nn::Optimizer& opt;
  tg::nn::LRScheduler& sched;
  TrainState& st;
  const Json& identity;
  Progress& prog;
  MixedPrecision& mp;
  std::vector<tg::Tensor> params;
  int64_t spe;              // steps per epoch
  int world = 1, rank = 0;  // data parallel (mpirun): the model is wrapped in a DDP
  size_t guarded = 0;       // st.hist.train_loss[:guarded] passed guard()

  // Before every checkpoint: a mean loss since the last one far above a uniform guess stops the
  // run like a NaN does (the same on every rank: the losses are the global batch's).
  void guard() {
    const std::string why =
        blown_up(st.hist.train_loss, guarded, static_cast<int64_t>(d.ds.class_names.size()));
    guarded = st.hist.train_loss.size();
    if (!why.empty())
      throw tg::Error(fmt::format(
          "{} (at step {}, epoch {}); {}. Lower --lr (now {}) or clip harder (--clip, now {})", why,
          st.global_step, st.epoch + 1, checkpoint_left(o.out), o.lr, o.clip));
  }

  void step(const Batch& b) {
    tg::Tensor loss;
    {
      PrecisionScope autocast(o.precision);
      loss = tg::cross_entropy(model.forward(b.ids, b.pad), b.labels);
    }
    tg::Tensor lt = loss.detach().to(tg::kCPU).to(tg::kFloat64).clone();
    if (world > 1) tg::dist::all_reduce(lt, tg::dist::ReduceOp::Avg);  // the global batch's loss
    const double lv = lt.item<double>();
    // A diverged run stops here, before the step, with the last good checkpoint on disk.
    if (!std::isfinite(lv))
      throw tg::Error(fmt::format(
          "training diverged: the loss is {} at step {} (epoch {}); {}. Lower --lr (now {}) or "
          "clip harder (--clip, now {})",
          lv, st.global_step + 1, st.epoch + 1, checkpoint_left(o.out), o.lr, o.clip));
    // Under DDP the gradients are averaged across ranks as they are produced; --clip 0: off.
    if (!mp.backward_and_step(loss, opt, params, o.clip))
      prog.line(
          fmt::format("step {}: skipped by the f16 loss scaler (inf/NaN gradient); loss "
                      "scale now {}",
                      st.global_step + 1, mp.loss_scale()));
    sched.step();
    st.hist.train_loss.push_back(lv);
    ++st.global_step;
    prog.step(lv, b.labels.numel() * world);
  }

  // Rank r's part of global step s: examples [s·B·N + r·B, +B) of the epoch's order. With more
  // than one rank the last step wraps around to the start, so every rank has B examples (as
  // DistributedSampler pads); one process keeps its short last batch.
  Batch rank_batch(const std::vector<int64_t>& order, int64_t s) const {
    const size_t B = static_cast<size_t>(o.batch_size);
    const size_t b0 = static_cast<size_t>(s) * B * static_cast<size_t>(world);
    if (world == 1) return make_batch(d, order, b0, std::min(order.size(), b0 + B), o.device);
    std::vector<int64_t> idx;
    for (size_t i = 0; i < B; ++i)
      idx.push_back(order[(b0 + static_cast<size_t>(rank) * B + i) % order.size()]);
    return make_batch(d, idx, 0, idx.size(), o.device);
  }

  // Trains the rest of the current epoch (from st.step_in_epoch; the order is a function of the
  // seed and the epoch, so a resumed run sees the same batches). False when training stops.
  bool epoch() {
    std::vector<int64_t> order = d.split.train;
    seeded_shuffle(order, o.seed * 7919ULL + static_cast<uint64_t>(st.epoch) + 1);
    prog.start_epoch(static_cast<int>(st.epoch + 1), static_cast<int>(o.epochs), spe);
    const auto t0 = Clock::now();
    bool stop = false;
    for (int64_t s = st.step_in_epoch; s < spe && !stop; ++s) {
      step(rank_batch(order, s));
      st.step_in_epoch = s + 1;
      stop = o.max_steps > 0 && st.global_step >= o.max_steps;
      if (!stop && o.save_every > 0 && st.global_step % o.save_every == 0 && s + 1 < spe) {
        guard();
        save_last(o, model, opt, sched, st, identity);
      }
    }
    st.seconds += seconds_since(t0);
    guard();
    if (st.step_in_epoch < spe) {  // stopped by --max-steps inside the epoch
      save_last(o, model, opt, sched, st, identity);
      prog.end_epoch(fmt::format("stopped at step {} (--max-steps)", st.global_step));
      return false;
    }
    return validate() && !stop;
  }

  // End of an epoch: validation, best model, resumable checkpoint, early stopping.
  bool validate() {
    if (world == 1) return validate_here();
    // Rank 0 validates (and writes best/); every rank continues from its state and decision.
    bool go = true;
    std::string shared;
    if (rank == 0) {
      go = validate_here(false);
      shared = Json({{"go", go}, {"meta", st.to_meta(identity)}}).dump();
    }
    Json j = Json::parse(tg::dist::broadcast_object(shared, 0));
    if (rank != 0) {
      st.from_meta(j["meta"].get<tg::nn::Metadata>(), "rank 0's training state");
      model.train();
    }
    save_last(o, model, opt, sched, st, identity);
    return j["go"].get<bool>();
  }

  bool validate_here(bool write_last = true) {
    Eval ev = evaluate(model, d, d.split.val, o.device, o.precision);
    const double acc = ev.cm.accuracy();
    st.hist.val_step.push_back(st.global_step);
    st.hist.val_loss.push_back(ev.loss);
    st.hist.val_acc.push_back(acc);
    bool improved = acc > st.best_acc || (acc == st.best_acc && ev.loss < st.best_loss);
    if (improved) {
      save_best(o, model, identity, acc);
      st.best_acc = acc;
      st.best_loss = ev.loss;
      st.best_epoch = st.epoch;
      st.bad_epochs = 0;
    } else {
      ++st.bad_epochs;
    }
    ++st.epoch;
    st.step_in_epoch = 0;
    if (write_last) save_last(o, model, opt, sched, st, identity);
    prog.end_epoch(fmt::format("epoch {}/{}: train loss {:.4f}  val loss {:.4f}  val acc {:.2f}%{}",
                               st.epoch, o.epochs, prog.epoch_mean_loss(), ev.loss, 100 * acc,
                               improved ? "  (best so far)" : ""));
    if (o.patience > 0 && st.bad_epochs >= o.patience && st.epoch < o.epochs) {
      prog.line(fmt::format("early stop: no better validation accuracy for {} epochs", o.patience));
      return false;
    }
    return true;
  }
};

// Test evaluation of the best model beside the baseline, pictures and metrics JSON.
Json final_report(const RunOptions& o, const Data& d, TextClassifier& model,
                  const ConfusionMatrix& nb, const TrainState& st, double seconds,
                  const MixedPrecision& mp) {
  tg::nn::load_model(o.out + "/best/model.safetensors", model);
  Eval test = evaluate(model, d, d.split.test, o.device, o.precision);
  const std::string what = o.dataset == "spam" ? "emails" : "fortunes";
  fmt::print("\n{}\n", comparison(test.cm, nb, what));

  const std::string explain_text = d.ds.examples[d.split.test.front()].text;
  model.to(tg::kCPU);  // the attention pictures are drawn from host tensors
  int pictures = write_attention_pictures(o.out + "/attention", model, d.bpe, explain_text);
  write_loss_curve(o.out + "/loss_curve.png", st.hist);

  Json m = {{"dataset", o.dataset},
            {"seed", o.seed},
            {"split_seed", o.data_seed()},
            {"precision", precision_name(o.precision)},
            {"skipped_steps", mp.skipped_steps()},
            {"test_accuracy", test.cm.accuracy()},
            {"baseline_accuracy", nb.accuracy()},
            {"test_loss", test.loss},
            {"transformer", metrics_json(test.cm)},
            {"baseline", metrics_json(nb)},
            {"baseline_name", "multinomial Naive Bayes (Laplace, words)"},
            {"classes", d.ds.class_names},
            {"examples",
             {{"train", d.split.train.size()},
              {"val", d.split.val.size()},
              {"test", d.split.test.size()}}},
            {"epochs_run", st.epoch},
            {"steps", st.global_step},
            {"best_epoch", st.best_epoch + 1},
            {"best_val_accuracy", st.best_acc},
            {"train_seconds", st.seconds},
            {"total_seconds", seconds},
            {"parameters", model.num_parameters()},
            {"environment", tgx::run_environment()},
            {"model", model.cfg.to_json()},
            {"history", st.hist.to_json()},
            {"attention_pictures", pictures}};
  tg::write_file_atomic(o.out + "/metrics.json", m.dump(2) + "\n");
  if (!o.metrics_out.empty()) tg::write_file_atomic(o.metrics_out, m.dump(2) + "\n");
  fmt::print(
      "\nwrote {0}/metrics.json, {0}/loss_curve.png, {1} attention pictures in "
      "{0}/attention/; checkpoint {0}/best  [{2:.1f}s total, {3:.1f}s training]\n",
      o.out, pictures, seconds, st.seconds);
  return m;
}

// The run folder claimed (rank 0), recovered from an interrupted save, and with --resume holding
// a checkpoint.
void open_run_folder(const RunOptions& o) {
  if (tg::dist::rank() == 0) {
    std::vector<std::string> own = common_run_files();
    for (const char* f : {"tokenizer.json", "loss_curve.png"}) own.push_back(f);
    claim_run_folder(o.out, o.resume, o.overwrite, own);
  }
  fs::create_directories(o.out);
  if (tg::dist::rank() == 0) recover_run_folder(o.out);
  if (tg::dist::world_size() > 1) tg::dist::barrier();  // the others read what rank 0 restored
  if (o.resume && !file_exists(tg::nn::checkpoint_model_path(o.out + "/last")))
    throw UserError(fmt::format("--resume: {}/last holds no checkpoint to resume", o.out));
}

std::string data_line(const RunOptions& o, const Data& d, double seconds) {
  return fmt::format(
      "{}: {} examples ({} train, {} validation, {} test), {} classes; BPE "
      "vocabulary {} tokens ({} merges) [{:.1f}s]",
      o.dataset, d.ds.examples.size(), d.split.train.size(), d.split.val.size(),
      d.split.test.size(), d.ds.class_names.size(), d.bpe.vocab_size(), d.bpe.num_merges(),
      seconds);
}

// The options' model with the data's vocabulary and classes.
ModelConfig model_config(const RunOptions& o, const Data& d) {
  ModelConfig cfg = o.model;
  cfg.vocab_size = d.bpe.vocab_size();
  cfg.num_classes = static_cast<int64_t>(d.ds.class_names.size());
  cfg.validate();
  return cfg;
}

// --resume: the checkpoint in `last` (of the same run: identity) into model, opt, sched and st.
// Returns the line to print when it was saved in another precision ("" otherwise).
std::string resume(const std::string& last, const Json& identity, TextClassifier& model,
                   tg::nn::AdamW& opt, tg::nn::CosineWithWarmupLR& sched, TrainState& st,
                   MixedPrecision& mp) {
  auto saved = tg::nn::load_safetensors(tg::nn::checkpoint_model_path(last));
  check_same_run(meta_json(saved.metadata, "cls.run", last), identity, last);
  tg::nn::CheckpointInfo info = tg::nn::load_checkpoint_distributed(last, model, opt, &sched);
  require_finite_weights(model, "--resume: " + last,
                         "refusing to resume from it (start a new run with --overwrite)");
  st.from_meta(info.extra, last);
  return mp.resume(info.extra, "--resume: " + last);
}

}  // namespace

Json train_and_evaluate(const RunOptions& o) {
  const auto t_start = Clock::now();
  if (o.epochs < 1 || o.batch_size < 1 || !(o.lr > 0) || o.vocab_size < 16)
    throw UserError(
        fmt::format("need --epochs >= 1, --batch-size >= 1, --lr > 0 and "
                    "--vocab-size >= 16 (have {}, {}, {}, {})",
                    o.epochs, o.batch_size, o.lr, o.vocab_size));
  open_run_folder(o);
  const int world = tg::dist::world_size(), rank = tg::dist::rank();
  // Only rank 0 of a data-parallel run prints, plots and writes.
  Progress prog(o.quiet || rank != 0 ? Progress::Mode::kQuiet : Progress::Mode::kAuto);
  Data d = prepare(o);
  prog.line(data_line(o, d, seconds_since(t_start)));
  ConfusionMatrix nb = naive_bayes_baseline(d);
  const ModelConfig cfg = model_config(o, d);
  const Json identity = run_identity(o, d, cfg);
  tg::manual_seed(o.seed);
  TextClassifier model(cfg);
  model.to(o.device);  // before the optimizer: its state follows the parameters' device
  std::vector<tg::Tensor> params = model.parameters();
  tg::nn::AdamWOptions ao(o.lr);
  ao.weight_decay = o.weight_decay;
  // mpirun -np N: rank 0's weights everywhere, gradients averaged (global batch = N x batch).
  std::unique_ptr<tg::nn::DistributedDataParallel> ddp;
  if (world > 1)
    ddp = std::make_unique<tg::nn::DistributedDataParallel>(
        std::shared_ptr<tg::nn::Module>(std::shared_ptr<tg::nn::Module>(), &model));
  tg::nn::AdamW opt(param_groups(model), ao);
  const int64_t n_train = static_cast<int64_t>(d.split.train.size());
  const int64_t global_batch = o.batch_size * world;
  const int64_t spe = (n_train + global_batch - 1) / global_batch, total = spe * o.epochs;
  const int64_t warmup = std::max<int64_t>(1, std::llround(o.warmup_frac * total));
  tg::nn::CosineWithWarmupLR sched(opt, warmup, total, 0.05);

  MixedPrecision mp(o.precision);
  TrainState st;
  st.mp = &mp;
  if (o.resume) {
    const std::string last = o.out + "/last";
    const std::string note = resume(last, identity, model, opt, sched, st, mp);
    if (!note.empty()) prog.line(note);
    prog.line(fmt::format("resumed {} at step {} (epoch {}, step {} of {})", last, st.global_step,
                          st.epoch + 1, st.step_in_epoch, spe));
  }
  prog.line(fmt::format("model: {} parameters; {} steps per epoch, {} epochs, warmup {} steps",
                        model.num_parameters(), spe, o.epochs, warmup));
  if (!mp.describe().empty()) prog.line(mp.describe());
  if (world > 1)
    prog.line(
        fmt::format("data parallel: {} ranks x batch {} = global batch {} ({} gradient "
                    "buckets)",
                    world, o.batch_size, global_batch, ddp->num_buckets()));

  Loop loop{o, d, model, opt, sched, st, identity, prog, mp, params, spe, world, rank};
  loop.guarded = st.hist.train_loss.size();  // a resumed run is judged on its own steps
  while (st.epoch < o.epochs && loop.epoch()) {
  }
  if (rank != 0) return Json();  // rank 0 reports
  if (st.best_epoch < 0) {       // stopped before any validation: the current model is the best one
    Eval ev = evaluate(model, d, d.split.val, o.device, o.precision);
    save_best(o, model, identity, ev.cm.accuracy());
  }
  return final_report(o, d, model, nb, st, seconds_since(t_start), mp);
}

Sharpness sharpness(const std::string& out, int64_t examples, int64_t iters,
                    const std::string& data_dir, uint64_t seed) {
  const auto t0 = std::chrono::steady_clock::now();
  TrainedRun run = load_run(out);
  const std::string path = out + "/best/model.safetensors";
  const Json id = meta_json(tg::nn::load_safetensors(path).metadata, "cls.run", path);
  RunOptions o;  // what rebuilds the run's data: its dataset, subset, split and tokenizer
  o.out = out;
  o.resume = true;  // prepare() then reads <out>/tokenizer.json instead of training one
  o.data_dir = data_dir;
  o.dataset = id.value("dataset", std::string("spam"));
  o.limit = id.value("limit", int64_t{0});
  o.split_seed = id.value("split_seed", int64_t{0});
  o.headers = id.value("headers", std::vector<std::string>{});
  o.model = ModelConfig::from_json(id.value("model", Json()), path);
  const Data d = prepare(o);
  const size_t n = std::min(d.split.train.size(), static_cast<size_t>(examples));
  const Batch b = make_batch(d, d.split.train, 0, n, tg::kCPU);
  TextClassifier& m = *run.model;
  m.eval();
  const std::vector<tg::Tensor> params = m.parameters();
  Sharpness r;
  r.examples = static_cast<int64_t>(n);
  for (const tg::Tensor& p : params) r.parameters += p.numel();
  tg::GradOptions cg;
  cg.create_graph = true;
  const tg::Tensor loss = tg::cross_entropy(m.forward(b.ids, b.pad), b.labels);
  r.loss = loss.item<double>();
  const std::vector<tg::Tensor> g = tg::grad({loss}, params, {}, cg);  // kept for every product
  tg::Generator gen;
  gen.set_seed(seed);
  std::vector<tg::Tensor> v;
  double vv = 0;
  for (const tg::Tensor& p : params) {
    tg::Tensor t = tg::Tensor::empty(p.shape(), tg::kFloat64);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = gen.normal();
    t = t.to(p.dtype());
    vv += tg::sum(t * t).item<double>();
    v.push_back(t);
  }
  for (tg::Tensor& t : v) t = t / std::sqrt(vv);
  for (int64_t k = 0; k < iters; ++k) {
    tg::Tensor gv = tg::sum(g[0] * v[0]);
    for (size_t i = 1; i < g.size(); ++i) gv = gv + tg::sum(g[i] * v[i]);
    tg::GradOptions keep;
    keep.retain_graph = true;
    std::vector<tg::Tensor> hv = tg::grad({gv}, params, {}, keep);
    double lambda = 0, norm2 = 0;
    for (size_t i = 0; i < hv.size(); ++i) {
      if (!hv[i].defined()) hv[i] = tg::zeros_like(params[i]);
      lambda += tg::sum(hv[i] * v[i]).item<double>();
      norm2 += tg::sum(hv[i] * hv[i]).item<double>();
    }
    r.lambda.push_back(lambda);
    if (!(norm2 > 0) || !std::isfinite(norm2))
      throw UserError(fmt::format("sharpness: the Hessian-vector product is {} at iteration {}",
                                  norm2 > 0 ? "not finite" : "zero", k + 1));
    for (size_t i = 0; i < v.size(); ++i) v[i] = hv[i] / std::sqrt(norm2);
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

TrainedRun load_run(const std::string& out) {
  const std::string path = out + "/best/model.safetensors";
  if (!file_exists(path))
    throw UserError(
        fmt::format("{}: no trained model there (missing best/model.safetensors); "
                    "train first, e.g. text_classification --out {}",
                    out, out));
  tg::nn::SafetensorsFile f = tg::nn::load_safetensors(path);
  Json run = meta_json(f.metadata, "cls.run", path);
  ModelConfig cfg = ModelConfig::from_json(run.value("model", Json()), path);
  TrainedRun r{Bpe::load(out + "/tokenizer.json"), {}, nullptr};
  if (r.bpe.vocab_size() != cfg.vocab_size)
    throw UserError(
        fmt::format("{}/tokenizer.json has {} tokens but the checkpoint {} was trained "
                    "with a vocabulary of {}: they are from different runs",
                    out, r.bpe.vocab_size(), path, cfg.vocab_size));
  if (!run.contains("classes") || !run["classes"].is_array() ||
      static_cast<int64_t>(run["classes"].size()) != cfg.num_classes)
    throw UserError(
        fmt::format("{}: class names missing or not {} of them", path, cfg.num_classes));
  // The run's fingerprint: the tokenizer the model was trained with (older runs carry none).
  if (run.contains("tokenizer") && run["tokenizer"].is_string() &&
      run["tokenizer"].get<std::string>() != r.bpe.fingerprint())
    throw UserError(fmt::format(
        "{}/tokenizer.json (fingerprint {}) is not the tokenizer {} was trained with ({}): they "
        "are from different runs",
        out, r.bpe.fingerprint(), path, run["tokenizer"].get<std::string>()));
  r.class_names = run["classes"].get<std::vector<std::string>>();
  r.model = std::make_shared<TextClassifier>(cfg);
  try {
    r.model->load_state_dict(f.tensors);
  } catch (const tg::Error& e) {
    throw UserError(fmt::format("{}: does not fit the model it names: {}", path, e.what()));
  }
  require_finite_weights(*r.model, path, "refusing to predict with it");
  r.model->eval();
  return r;
}

std::vector<int64_t> TrainedRun::encode(const std::string& text, const std::string& what) const {
  require_utf8(text, what);
  if (trim(text).empty()) throw UserError(what + ": the text is empty");
  std::vector<int64_t> ids = bpe.encode_head_tail(text, model->cfg.max_len, model->cfg.tail);
  if (ids.empty()) ids.push_back(Bpe::kUnk);
  return ids;
}

int explain(const std::string& out, const std::string& text) {
  require_utf8(text, "--explain text");
  if (trim(text).empty()) throw UserError("--explain: the text is empty");
  TrainedRun run = load_run(out);
  tg::NoGradGuard ng;
  return write_attention_pictures(out + "/explain", *run.model, run.bpe, text);
}

Prediction predict(const std::string& out, const std::vector<std::string>& texts) {
  TrainedRun run = load_run(out);
  Prediction p;
  p.class_names = run.class_names;
  tg::NoGradGuard ng;
  for (const std::string& text : texts) {
    std::vector<int64_t> ids = run.encode(text, "--predict");
    const int64_t T = static_cast<int64_t>(ids.size());
    tg::Tensor logits = run.model->forward(tg::tensor(ids, {1, T}),
                                           tg::tensor(std::vector<bool>(T, false), {1, T}));
    p.probs.push_back(tg::softmax(logits, 1).to_vector<double>());
  }
  return p;
}

AttentionInput attention_input(const std::string& out, const std::string& text, int64_t layer) {
  TrainedRun run = load_run(out);
  const ModelConfig& cfg = run.model->cfg;
  if (layer < 0 || layer >= cfg.layers)
    throw UserError(
        fmt::format("--layer {}: the model in {} has layers 0..{}", layer, out, cfg.layers - 1));
  std::vector<int64_t> ids = run.encode(text, "--text");
  const int64_t T = static_cast<int64_t>(ids.size());
  AttentionInput a;
  a.heads = cfg.heads;
  a.prefix = fmt::format("encoder.layers.{}.self_attn", layer);
  for (int64_t id : ids) a.tokens.push_back(run.bpe.decode({id}));
  // The self-attention module's forward hook sees exactly the query it is given.
  auto& attn = *run.model->encoder->layer(static_cast<size_t>(layer))->self_attn;
  int hook = attn.register_forward_hook([&](tg::nn::Module&, const std::vector<tg::Tensor>& in,
                                            const tg::Tensor&) { a.x = in[0].detach().clone(); });
  tg::NoGradGuard ng;
  run.model->forward(tg::tensor(ids, {1, T}), tg::tensor(std::vector<bool>(T, false), {1, T}));
  attn.remove_forward_hook(hook);
  return a;
}

}  // namespace tgx::cls
