// examples/translation/train.cpp — encoding, evaluation and the training loop (see train.hpp).
#include "translation/train.hpp"

#include "autograd/io.hpp"
#include "autograd/tape.hpp"
#include "common/cli.hpp"
#include "common/guard.hpp"
#include "common/metrics.hpp"
#include "common/run_folder.hpp"
#include "common/text.hpp"
#include "nn/clip.hpp"
#include "nn/checkpoint_distributed.hpp"
#include "nn/ddp.hpp"
#include "nn/dist/dist.hpp"
#include "nn/schedule.hpp"
#include "ops/ops.hpp"
#include "translation/decode.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>

namespace tgx::translation {

using tg::Tensor;
using Clock = std::chrono::steady_clock;

// ---- vocabularies and encoding ------------------------------------------------------------------

std::string Vocabs::to_json() const {
  nlohmann::json j = {{"level", level == Level::Word ? "word" : "char"},
                      {"source", nlohmann::json::parse(src.to_json())},
                      {"target", nlohmann::json::parse(tgt.to_json())}};
  return j.dump();
}

Vocabs Vocabs::from_json(const std::string& text, const std::string& what) {
  Vocabs v;
  try {
    nlohmann::json j = nlohmann::json::parse(text);
    std::string level = j.at("level").get<std::string>();
    if (level != "word" && level != "char") throw UserError(what + ": level must be word or char");
    v.level = level == "word" ? Level::Word : Level::Char;
    v.src = Vocab::from_json(j.at("source").dump(), what + " (source)");
    v.tgt = Vocab::from_json(j.at("target").dump(), what + " (target)");
  } catch (const nlohmann::json::exception& e) {
    throw UserError(fmt::format("{}: not a vocabulary file ({})", what, e.what()));
  }
  return v;
}

Vocabs Vocabs::build(const Dataset& d) {
  std::vector<std::vector<std::string>> s, t;
  for (const auto* set : {&d.train, &d.valid, &d.heldout})
    for (const Example& e : *set) {
      s.push_back(e.src);
      t.push_back(e.tgt);
    }
  return Vocabs{Vocab::build(s), Vocab::build(t), d.level};
}

Encoded encode_examples(const std::vector<Example>& ex, const Vocabs& v, const std::string& what) {
  Encoded out;
  for (const Example& e : ex) {
    out.src.push_back(v.src.encode(e.src, what));
    out.src.back().push_back(Vocab::kEos);
    out.tgt.push_back(v.tgt.encode(e.tgt, what));
  }
  return out;
}

int64_t longest_sequence(const Dataset& d) {
  size_t n = 0;
  for (const auto* set : {&d.train, &d.valid, &d.heldout})
    for (const Example& e : *set) n = std::max({n, e.src.size() + 1, e.tgt.size() + 2});
  return static_cast<int64_t>(n);
}

// ---- evaluation
// -----------------------------------------------------------------------------------

namespace {

std::vector<Hypothesis> run_decoder(Seq2Seq& model, const std::vector<std::vector<int64_t>>& src,
                                    int64_t beam, double length_penalty) {
  int64_t max_len = model.cfg.max_len - 2;  // room for <bos> and <eos>
  return beam <= 1 ? greedy_decode(model, src, max_len)
                   : beam_decode(model, src, beam, max_len, length_penalty);
}

}  // namespace

EvalResult evaluate(Seq2Seq& model, const std::vector<Example>& ex, const Vocabs& v, int64_t beam,
                    double length_penalty, int64_t batch) {
  auto t0 = Clock::now();
  model.eval();
  Encoded enc = encode_examples(ex, v, "evaluation set");
  EvalResult r;
  size_t step = static_cast<size_t>(std::max<int64_t>(1, beam <= 1 ? batch : batch / beam));
  for (size_t i = 0; i < ex.size(); i += step) {
    size_t j = std::min(ex.size(), i + step);
    std::vector<std::vector<int64_t>> src(enc.src.begin() + i, enc.src.begin() + j);
    for (const Hypothesis& h : run_decoder(model, src, beam, length_penalty))
      r.hypotheses.push_back(detokenize(v.tgt.decode(h.ids), v.level));
  }
  int64_t exact = 0;
  for (size_t i = 0; i < ex.size(); ++i) {
    r.references.push_back(ex[i].tgt_text);
    exact += r.hypotheses[i] == ex[i].tgt_text;
  }
  r.exact_match = ex.empty() ? 0 : 100.0 * exact / static_cast<double>(ex.size());
  r.chrf = ex.empty() ? 0 : chrf(r.hypotheses, r.references);
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return r;
}

std::vector<std::string> translate_tokens(Seq2Seq& model, const Vocabs& v,
                                          const std::vector<std::string>& src, int64_t beam,
                                          double length_penalty) {
  model.eval();
  std::vector<int64_t> ids = v.src.encode(src, "--translate");
  ids.push_back(Vocab::kEos);
  if (static_cast<int64_t>(ids.size()) > model.cfg.max_len)
    throw UserError(fmt::format("--translate: {} tokens is longer than the model's {} positions",
                                ids.size(), model.cfg.max_len));
  return v.tgt.decode(run_decoder(model, {ids}, beam, length_penalty)[0].ids);
}

// ---- checkpoints
// ---------------------------------------------------------------------------------

std::string checkpoint_dir(const std::string& out_dir) { return tgx::last_dir(out_dir); }
std::string best_dir(const std::string& out_dir) { return out_dir + "/best"; }

tg::nn::Metadata check_saved_model(const std::string& model_path, const ModelConfig& cfg,
                                   const Vocabs& v) {
  tg::nn::SafetensorsFile f;
  try {
    f = tg::nn::load_safetensors(model_path);
  } catch (const tg::Error& e) {
    throw UserError(fmt::format("cannot read checkpoint: {}", e.what()));
  }
  auto it = f.metadata.find("translation.config");
  if (it == f.metadata.end())
    throw UserError(
        fmt::format("{}: not a translation checkpoint (no translation.config)", model_path));
  std::string diff = cfg.differences(ModelConfig::from_json(it->second, model_path));
  if (!diff.empty())
    throw UserError(
        fmt::format("{}: checkpoint is from another model (this run vs checkpoint: "
                    "{})",
                    model_path, diff));
  auto vit = f.metadata.find("translation.vocab");
  if (vit == f.metadata.end() || vit->second != v.to_json())
    throw UserError(
        fmt::format("{}: checkpoint was trained with other vocabularies (dataset, "
                    "seed or vocab.json differ)",
                    model_path));
  return f.metadata;
}

namespace {

void write_history(const std::string& path, const TrainLog& log) {
  nlohmann::json j = {{"steps", log.steps},
                      {"losses", log.losses},
                      {"valid_steps", log.valid_steps},
                      {"valid_exact", log.valid_exact}};
  tg::write_file_atomic(path, j.dump());
}

void read_history(const std::string& path, TrainLog& log) {
  if (!file_exists(path)) return;
  try {
    nlohmann::json j = nlohmann::json::parse(read_file(path));
    log.steps = j.at("steps").get<std::vector<double>>();
    log.losses = j.at("losses").get<std::vector<double>>();
    log.valid_steps = j.at("valid_steps").get<std::vector<double>>();
    log.valid_exact = j.at("valid_exact").get<std::vector<double>>();
  } catch (const nlohmann::json::exception& e) {
    throw UserError(fmt::format("{}: not a training history ({})", path, e.what()));
  }
}

// AdamW with weight decay on matrices only (not biases, LayerNorm or positions).
std::vector<tg::nn::ParamGroup> param_groups(Seq2Seq& model) {
  std::vector<Tensor> decay, no_decay;
  for (const auto& [name, p] : model.named_parameters())
    (p.dim() >= 2 ? decay : no_decay).push_back(p);
  return {tg::nn::ParamGroup(decay), tg::nn::ParamGroup(no_decay, {{"weight_decay", 0.0}})};
}

// The examples of step `step`: epoch-wise permutations of the training set, seeded by (seed,
// epoch), so a resumed run sees the same batches.
class Batcher {
 public:
  Batcher(size_t n, int64_t batch, uint64_t seed) : n_(n), batch_(batch), seed_(seed) {
    if (batch < 1) throw UserError(fmt::format("--batch-size must be at least 1 (got {})", batch));
    if (n < static_cast<size_t>(batch))
      throw UserError(
          fmt::format("--batch-size {} is larger than the {} training pairs", batch, n));
  }
  std::vector<size_t> indices(int64_t step) {
    int64_t per_epoch = static_cast<int64_t>(n_) / batch_;
    int64_t epoch = step / per_epoch, k = step % per_epoch;
    if (epoch != epoch_) {
      perm_.resize(n_);
      for (size_t i = 0; i < n_; ++i) perm_[i] = i;
      tg::Generator g;
      g.set_seed(seed_ * 1000003ULL + static_cast<uint64_t>(epoch) + 17);
      for (size_t i = n_; i > 1; --i) std::swap(perm_[i - 1], perm_[g.next_u64() % i]);
      epoch_ = epoch;
    }
    return {perm_.begin() + k * batch_, perm_.begin() + (k + 1) * batch_};
  }

 private:
  size_t n_;
  int64_t batch_;
  uint64_t seed_;
  int64_t epoch_ = -1;
  std::vector<size_t> perm_;
};

// One teacher-forced step; returns the loss.
double train_step(Seq2Seq& model, const Encoded& tr, const std::vector<size_t>& idx,
                  tg::nn::Optimizer& opt, const TrainOptions& o, int64_t step, MixedPrecision& mp) {
  std::vector<std::vector<int64_t>> src, tin, tout;
  for (size_t i : idx) {
    src.push_back(tr.src[i]);
    tin.push_back({Vocab::kBos});
    tin.back().insert(tin.back().end(), tr.tgt[i].begin(), tr.tgt[i].end());
    tout.push_back(tr.tgt[i]);
    tout.back().push_back(Vocab::kEos);
  }
  const tg::Device dev = o.device;
  Tensor target = pad_batch(tout).to(dev);  // (B, T)
  tg::CrossEntropyOptions ce;
  ce.ignore_index = Vocab::kPad;
  ce.label_smoothing = o.label_smoothing;
  Tensor loss;
  {
    PrecisionScope autocast(o.precision);  // the forward and the loss; backward runs outside
    Tensor logits = model.forward(pad_batch(src).to(dev), pad_batch(tin).to(dev));  // (B, T, V)
    int64_t BT = logits.size(0) * logits.size(1);
    loss = tg::cross_entropy(logits.reshape({BT, logits.size(2)}), target.reshape({BT}), ce);
  }
  Tensor lt = loss.detach().to(tg::kCPU).to(tg::kFloat64).clone();
  if (tg::dist::world_size() > 1) tg::dist::all_reduce(lt, tg::dist::ReduceOp::Avg);
  const double lv = lt.item<double>();  // the global batch's loss under data parallelism
  // A diverged run stops here, before the step, with the last good checkpoint on disk.
  if (!std::isfinite(lv))
    throw tg::Error(
        fmt::format("training diverged: the loss is {} at step {}; {}. Lower --lr (now {}) or clip "
                    "(--clip, now {})",
                    lv, step + 1, tgx::checkpoint_left(o.out_dir), o.lr, o.clip));
  mp.backward_and_step(loss, opt, model.parameters(), o.clip);
  return lv;
}

void save_model_files(const std::string& dir, const Vocabs& v) {
  tg::write_file_atomic(dir + "/vocab.json", v.to_json());
}

// --resume: the checkpoint in ckpt into model, opt and sched, its best validation and history
// into log; returns its step.
// A checkpoint saved in another precision continues, with a line on progress saying so.
int64_t resume(const std::string& ckpt, Seq2Seq& model, const Vocabs& v, tg::nn::AdamW& opt,
               tg::nn::CosineWithWarmupLR& sched, TrainLog& log, MixedPrecision& mp,
               Progress& progress) {
  if (!file_exists(tg::nn::checkpoint_model_path(ckpt)))
    throw UserError(fmt::format("--resume: no checkpoint in {}", ckpt));
  check_saved_model(tg::nn::checkpoint_model_path(ckpt), model.cfg, v);
  const tg::nn::CheckpointInfo info = resume_checkpoint(ckpt, model, opt, sched);
  auto extra = [&](const std::string& key) {
    auto it = info.extra.find(key);
    if (it == info.extra.end())
      throw UserError(fmt::format("--resume: {}: no {} in its metadata", ckpt, key));
    return it->second;
  };
  auto best_valid = parse_number(extra("translation.best_valid"));
  auto best_step = parse_int(extra("translation.best_step"));
  if (!best_valid || !best_step)
    throw UserError(fmt::format("--resume: {}: malformed translation.best_* metadata", ckpt));
  log.best_valid = *best_valid;
  log.best_step = *best_step;
  read_history(ckpt + "/history.json", log);
  const std::string note = mp.resume(info.extra, "--resume: " + ckpt);
  if (!note.empty()) progress.line(note);
  return info.step;
}

// Rank 0's validation at `step` (on the CPU: decoding reads logits on the host), logged.
EvalResult validate(Seq2Seq& model, const std::vector<Example>& valid, const Vocabs& v,
                    tg::Device device, int64_t step, TrainLog& log) {
  model.to(tg::kCPU);
  EvalResult r = evaluate(model, valid, v, 1);  // in the caller's precision
  model.to(device);
  log.valid_steps.push_back(static_cast<double>(step));
  log.valid_exact.push_back(r.exact_match);
  return r;
}

// The best model so far into <out>/best, with its step.
void save_best(const std::string& best, Seq2Seq& model, const tg::nn::Metadata& meta,
               const Vocabs& v, int64_t step) {
  std::filesystem::create_directories(best);
  tg::nn::Metadata bm = meta;
  bm["translation.step"] = std::to_string(step);
  tg::nn::save_safetensors(best + "/model.safetensors", model.state_dict(), bm);
  save_model_files(best, v);
}

}  // namespace

namespace {

// What the evaluation points of one training run share. mpirun -np N: data parallel, global
// batch = N x --batch-size; rank 0 validates and writes.
struct Run {
  Seq2Seq& model;
  const Vocabs& v;
  const TrainOptions& o;
  tg::nn::AdamW& opt;
  tg::nn::CosineWithWarmupLR& sched;
  const std::vector<Example>& valid;
  const tg::nn::Metadata& meta;
  TrainLog& log;
  Progress& progress;
  MixedPrecision& mp;
  int world = tg::dist::world_size(), rank = tg::dist::rank();

  // rank 0's decision (time limit, early stop) for every rank of a data-parallel run.
  bool rank0_decides(bool b) const {
    if (world == 1) return b;
    Tensor flag = tg::tensor(std::vector<int64_t>{b ? 1 : 0});
    tg::dist::broadcast(flag, 0);
    return flag.item<int64_t>() != 0;
  }

  // Early stopping (rank 0): --patience validations in a row without a better exact match.
  bool plateau(int64_t step, int64_t end) const {
    int64_t since = 0;
    for (double vs : log.valid_steps) since += vs > static_cast<double>(log.best_step);
    return o.patience > 0 && since >= o.patience && step < end;
  }

  // An evaluation point after `step`: validation (rank 0), the best model, <out>/last, the
  // progress lines; true when training stops (early stop or out of time).
  bool evaluate(int64_t step, int64_t end, double loss, bool out_of_time, double elapsed) {
    tg::nn::Metadata m = meta;
    m.merge(mp.metadata());
    EvalResult r;
    bool better = false;
    if (rank == 0) {
      PrecisionScope autocast(o.precision);
      r = validate(model, valid, v, o.device, step, log);
      better = r.exact_match > log.best_valid;
      if (better) {
        log.best_valid = r.exact_match;
        log.best_step = step;
        save_best(best_dir(o.out_dir), model, meta, v, step);
      }
      m["translation.best_valid"] = fmt::format("{}", log.best_valid);
      m["translation.best_step"] = std::to_string(log.best_step);
    }
    // Collective: every rank's generator state travels with it; rank 0 writes, and swaps the
    // folder in as <out>/last (common/run_folder.hpp: no instant without a complete one).
    tgx::save_last(o.out_dir, [&](const std::string& dir) {
      tg::nn::save_checkpoint_distributed(dir, model, opt, &sched, step, m);
      if (rank != 0) return;
      save_model_files(dir, v);
      write_history(dir + "/history.json", log);
    });
    const bool stop = rank0_decides(rank == 0 && plateau(step, end));
    if (rank != 0) return out_of_time || stop;
    progress.line(
        fmt::format("step {}: loss {:.4f}, validation exact match {:.1f}% ({} "
                    "sentences){}",
                    step, loss, r.exact_match, valid.size(), better ? " (best)" : ""));
    if (stop) {
      log.early_stopped = true;
      progress.line(
          fmt::format("early stop at step {}: no better validation exact match in {} "
                      "validations (--patience); best {:.1f}% at step {}",
                      step, o.patience, log.best_valid, log.best_step));
      return true;
    }
    if (out_of_time)
      progress.line(fmt::format("time limit reached after {:.0f}s at step {}", elapsed, step));
    return out_of_time;
  }
};

}  // namespace

TrainLog train(Seq2Seq& model, const Dataset& d, const Vocabs& v, const TrainOptions& o,
               Progress& progress) {
  if (o.steps < 1) throw UserError(fmt::format("--steps must be at least 1 (got {})", o.steps));
  Encoded tr = encode_examples(d.train, v, d.name + " training set");
  std::vector<Example> valid(d.valid.begin(),
                             d.valid.begin() + std::min<int64_t>(o.valid_subset, d.valid.size()));
  model.to(o.device);  // the optimizer's state follows the parameters
  const int world = tg::dist::world_size(), rank = tg::dist::rank();
  std::unique_ptr<tg::nn::DistributedDataParallel> ddp;
  if (world > 1)
    ddp = std::make_unique<tg::nn::DistributedDataParallel>(
        std::shared_ptr<tg::nn::Module>(std::shared_ptr<tg::nn::Module>(), &model));
  tg::nn::AdamWOptions ao(o.lr);
  ao.weight_decay = o.weight_decay;
  tg::nn::AdamW opt(param_groups(model), ao);
  tg::nn::CosineWithWarmupLR sched(opt, std::min(o.warmup, o.steps), o.steps, 0.05);
  Batcher batcher(tr.src.size(), o.batch_size * world, o.seed);
  const tg::nn::Metadata meta = {{"translation.config", model.cfg.to_json()},
                                 {"translation.vocab", v.to_json()}};
  TrainLog log;
  MixedPrecision mp(o.precision);
  if (!mp.describe().empty()) progress.line(mp.describe());
  Run run{model, v, o, opt, sched, valid, meta, log, progress, mp};
  int64_t step = 0;
  if (rank == 0) tgx::recover_run_folder(o.out_dir);
  if (world > 1) tg::dist::barrier();  // the others read what rank 0 restored
  if (o.resume) step = resume(checkpoint_dir(o.out_dir), model, v, opt, sched, log, mp, progress);
  log.start_step = step;
  size_t guarded = log.losses.size();  // losses[:guarded] passed the blown-up check
  int64_t end = o.max_steps > 0 ? std::min(o.steps, step + o.max_steps) : o.steps;
  auto t0 = Clock::now();
  progress.start_epoch(1, 1, std::max<int64_t>(end - step, 0));
  while (step < end) {
    model.train();
    std::vector<size_t> global = batcher.indices(step);  // rank r takes block r of the step
    std::vector<size_t> mine(global.begin() + rank * o.batch_size,
                             global.begin() + (rank + 1) * o.batch_size);
    const int64_t skipped = mp.skipped_steps();
    double loss = train_step(model, tr, mine, opt, o, step, mp);
    if (mp.skipped_steps() > skipped)
      progress.line(fmt::format(
          "step {}: skipped by the f16 loss scaler (inf/NaN gradient); loss scale now {}", step + 1,
          mp.loss_scale()));
    sched.step();
    ++step;
    log.steps.push_back(static_cast<double>(step));
    log.losses.push_back(loss);
    progress.step(loss, o.batch_size * world);
    double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
    bool out_of_time = o.time_limit_s > 0 && elapsed >= o.time_limit_s;
    if (o.time_limit_s > 0) out_of_time = run.rank0_decides(out_of_time);  // rank 0's clock
    if (step % o.eval_every != 0 && step != end && !out_of_time) continue;
    // Before any checkpoint: a mean loss far above a uniform guess stops the run like a NaN
    // (on every rank alike: the losses are the global batch's).
    if (std::string why = blown_up(log.losses, guarded, static_cast<int64_t>(v.tgt.size()));
        !why.empty())
      throw tg::Error(
          fmt::format("{} (at step {}); {}. Lower --lr (now {}) or clip (--clip, now {})", why,
                      step, tgx::checkpoint_left(o.out_dir), o.lr, o.clip));
    guarded = log.losses.size();
    if (run.evaluate(step, end, loss, out_of_time, elapsed)) break;
  }
  log.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  progress.end_epoch(
      fmt::format("trained to step {} in {:.1f}s; best validation exact match "
                  "{:.1f}% at step {}",
                  step, log.seconds, log.best_valid, log.best_step));
  log.final_step = step;
  log.skipped_steps = mp.skipped_steps();
  model.to(tg::kCPU);  // evaluation and decoding run on the CPU
  return log;
}

}  // namespace tgx::translation
