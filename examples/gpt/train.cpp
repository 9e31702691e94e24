// examples/gpt/train.cpp — batches, evaluation, the training loop with its checkpoints and exact
// resume, and loading the best model (see train.hpp).
#include "gpt/train.hpp"

#include "autograd/tape.hpp"
#include "common/cli.hpp"
#include "common/run_folder.hpp"
#include "common/same_run.hpp"
#include "common/text.hpp"
#include "common/guard.hpp"
#include "nn/checkpoint.hpp"
#include "nn/clip.hpp"
#include "nn/checkpoint_distributed.hpp"
#include "nn/ddp.hpp"
#include "nn/dist/dist.hpp"
#include "nn/optim.hpp"
#include "nn/schedule.hpp"
#include "ops/ops.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>

namespace tgx::gpt {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct Batch {
  tg::Tensor x, y;  // (B, T) int64 inputs and next-character targets
};

Batch make_batch(const std::vector<int64_t>& ids, const std::vector<int64_t>& starts, size_t begin,
                 size_t end, int64_t T, tg::Device dev) {
  const int64_t B = static_cast<int64_t>(end - begin);
  std::vector<int64_t> x(static_cast<size_t>(B * T)), y(static_cast<size_t>(B * T));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) {
      const size_t s = static_cast<size_t>(starts[begin + static_cast<size_t>(b)] + t);
      x[static_cast<size_t>(b * T + t)] = ids[s];
      y[static_cast<size_t>(b * T + t)] = ids[s + 1];
    }
  return {tg::tensor(x, {B, T}).to(dev), tg::tensor(y, {B, T}).to(dev)};
}

tg::Tensor lm_loss(Gpt& model, const Batch& b, tg::Reduction r = tg::Reduction::Mean) {
  tg::Tensor logits = model.forward(b.x);  // (B, T, V)
  const int64_t BT = logits.size(0) * logits.size(1);
  tg::CrossEntropyOptions ce;
  ce.reduction = r;
  return tg::cross_entropy(logits.reshape({BT, logits.size(2)}), b.y.reshape({BT}), ce);
}

// AdamW decays the matrices of the blocks and the head (not embeddings, norms or biases).
std::vector<tg::nn::ParamGroup> param_groups(Gpt& m) {
  std::vector<tg::Tensor> decay, no_decay;
  for (auto& [name, p] : m.named_parameters()) {
    const bool emb = name.rfind("tok_emb", 0) == 0 || name.rfind("pos_emb", 0) == 0;
    // A tied head is the token embedding: nanoGPT decays it (it is a Linear weight there).
    (p.dim() >= 2 && (!emb || (m.cfg.tie_weights && name == "tok_emb.weight")) ? decay : no_decay)
        .push_back(p);
  }
  return {tg::nn::ParamGroup(decay), tg::nn::ParamGroup(no_decay, {{"weight_decay", 0.0}})};
}

// The JSON under `key` of a gpt checkpoint's metadata (common/same_run.hpp).
Json meta_json(const tg::nn::Metadata& m, const std::string& key, const std::string& what) {
  return tgx::meta_json(m, key, what, "gpt");
}

// Everything of the loop that a checkpoint carries besides model, optimizer and scheduler.
struct LoopState {
  TrainResult r;
  int64_t bad_evals = 0;
  tg::Generator sampler;

  tg::nn::Metadata meta(const Json& identity, const CharVocab& v, const GptConfig& cfg,
                        const MixedPrecision& mp) const {
    Json s = {{"step", r.step},
              {"best_step", r.best_step},
              {"best_heldout", r.best_heldout},
              {"bad_evals", bad_evals},
              {"seconds", r.seconds}};
    tg::nn::Metadata m = {{"gpt.run", identity.dump()},
                          {"gpt.state", s.dump()},
                          {"gpt.history", r.history.to_json().dump()},
                          {"gpt.sampler", sampler.get_state()},
                          {"gpt.config", cfg.to_json().dump()},
                          {"gpt.vocab", v.to_json()}};
    m.merge(mp.metadata());
    return m;
  }
  void restore(const tg::nn::Metadata& m, const std::string& what) {
    Json s = meta_json(m, "gpt.state", what);
    r.step = s.value("step", int64_t{0});
    r.best_step = s.value("best_step", int64_t{0});
    r.best_heldout = s.value("best_heldout", 0.0);
    bad_evals = s.value("bad_evals", int64_t{0});
    r.seconds = s.value("seconds", 0.0);
    r.history = History::from_json(meta_json(m, "gpt.history", what), what);
    auto it = m.find("gpt.sampler");
    if (it == m.end()) throw UserError(fmt::format("{}: no gpt.sampler state", what));
    sampler.set_state(it->second);
  }
};

void save_best(const std::string& out, Gpt& model, const CharVocab& v, int64_t step,
               double heldout) {
  std::filesystem::create_directories(out + "/best");
  tg::nn::save_safetensors(out + "/best/model.safetensors", model.state_dict(),
                           {{"gpt.config", model.cfg.to_json().dump()},
                            {"gpt.vocab", v.to_json()},
                            {"gpt.step", std::to_string(step)},
                            {"gpt.heldout_loss", fmt::format("{}", heldout)}});
}

}  // namespace

Json History::to_json() const {
  return {{"loss", loss},
          {"eval_step", eval_step},
          {"eval_train", eval_train},
          {"eval_heldout", eval_heldout}};
}

History History::from_json(const Json& j, const std::string& what) {
  History h;
  try {
    h.loss = j.at("loss").get<std::vector<double>>();
    h.eval_step = j.at("eval_step").get<std::vector<int64_t>>();
    h.eval_train = j.at("eval_train").get<std::vector<double>>();
    h.eval_heldout = j.at("eval_heldout").get<std::vector<double>>();
  } catch (const Json::exception& e) {
    throw UserError(fmt::format("{}: not a training history ({})", what, e.what()));
  }
  return h;
}

std::vector<int64_t> eval_starts(int64_t size, int64_t T, int64_t n, uint64_t seed) {
  if (size < T + 2)
    throw UserError(
        fmt::format("a text of {} characters is too short for windows of --block {} + 1", size, T));
  tg::Generator g;
  g.set_seed(seed * 7919ULL + 0xe7a1ULL);
  std::vector<int64_t> s(static_cast<size_t>(n));
  for (int64_t& v : s) v = static_cast<int64_t>(g.next_u64() % static_cast<uint64_t>(size - T));
  return s;
}

double evaluate(Gpt& model, const std::vector<int64_t>& ids, const std::vector<int64_t>& starts,
                int64_t batch, tg::Device device) {
  tg::NoGradGuard ng;
  const bool was_training = model.is_training();
  model.eval();
  double sum = 0;
  const int64_t T = model.cfg.block;
  for (size_t i = 0; i < starts.size(); i += static_cast<size_t>(batch)) {
    Batch b = make_batch(ids, starts, i, std::min(starts.size(), i + static_cast<size_t>(batch)), T,
                         device);
    sum += lm_loss(model, b, tg::Reduction::Sum).to(tg::kCPU).item<double>();
  }
  model.train(was_training);
  return sum / static_cast<double>(starts.size() * static_cast<size_t>(T));
}

double evaluate_text(Gpt& model, const std::vector<int64_t>& ids, int64_t batch,
                     tg::Device device) {
  const int64_t L = static_cast<int64_t>(ids.size()), T0 = model.cfg.block;
  if (L < 2) throw UserError("evaluate_text: the text needs at least 2 characters");
  const int64_t T = std::min(T0, L - 1), stride = std::max<int64_t>(1, T - T / 4);
  std::vector<int64_t> starts = {0};
  while (starts.back() + T < L - 1) starts.push_back(std::min(starts.back() + stride, L - 1 - T));
  tg::NoGradGuard ng;
  const bool was_training = model.is_training();
  model.eval();
  double sum = 0;
  int64_t done = 0;  // targets ids[1 .. done] are scored
  for (size_t i = 0; i < starts.size(); i += static_cast<size_t>(batch)) {
    const size_t j = std::min(starts.size(), i + static_cast<size_t>(batch));
    Batch b = make_batch(ids, starts, i, j, T, device);
    std::vector<double> nll =
        lm_loss(model, b, tg::Reduction::None).to(tg::kCPU).to_vector<double>();  // (B·T)
    for (size_t w = i; w < j; ++w)
      for (int64_t t = 0; t < T; ++t) {
        const int64_t target = starts[w] + t + 1;
        if (target <= done) continue;
        sum += nll[(w - i) * static_cast<size_t>(T) + static_cast<size_t>(t)];
        done = target;
      }
  }
  model.train(was_training);
  return sum / static_cast<double>(L - 1);
}

namespace {

// --resume: the checkpoint in `last` (of the same run: identity) into model, opt, sched and st.
// Returns the line to print when it was saved in another precision ("" otherwise).
std::string resume(const std::string& last, const Json& identity, Gpt& model, tg::nn::AdamW& opt,
                   tg::nn::CosineWithWarmupLR& sched, LoopState& st, MixedPrecision& mp) {
  if (!file_exists(tg::nn::checkpoint_model_path(last)))
    throw UserError(fmt::format("--resume: {} holds no checkpoint to resume", last));
  auto saved = tg::nn::load_safetensors(tg::nn::checkpoint_model_path(last));
  check_same_run(meta_json(saved.metadata, "gpt.run", last), identity, last);
  const tg::nn::CheckpointInfo info = resume_checkpoint(last, model, opt, sched);
  st.restore(info.extra, last);
  return mp.resume(info.extra, "--resume: " + last);
}

// This rank's training loss (recorded) on its block of the step's world x B random windows
// (every rank draws the same starts; rank r takes block r).
tg::Tensor batch_loss(Gpt& model, const std::vector<int64_t>& ids, tg::Generator& sampler,
                      const TrainOptions& o) {
  const int64_t T = model.cfg.block, B = o.batch_size, L = static_cast<int64_t>(ids.size());
  std::vector<int64_t> starts(static_cast<size_t>(B * tg::dist::world_size()));
  for (int64_t& s : starts)
    s = static_cast<int64_t>(sampler.next_u64() % static_cast<uint64_t>(L - T));
  const size_t mine = static_cast<size_t>(tg::dist::rank() * B);
  return lm_loss(model, make_batch(ids, starts, mine, mine + static_cast<size_t>(B), T, o.device));
}

// The loss's value averaged over the ranks: the global batch's.
double global_mean(const tg::Tensor& loss) {
  tg::Tensor lt = loss.detach().to(tg::kCPU).to(tg::kFloat64).clone();
  if (tg::dist::world_size() > 1) tg::dist::all_reduce(lt, tg::dist::ReduceOp::Avg);
  return lt.item<double>();
}

// Rank 0's training and held-out losses on their evaluation windows, for every rank.
std::pair<double, double> rank0_evaluation(Gpt& model, const std::vector<int64_t>& train_ids,
                                           const std::vector<int64_t>& train_eval,
                                           const std::vector<int64_t>& heldout_ids,
                                           const std::vector<int64_t>& held_eval,
                                           const TrainOptions& o) {
  const int64_t B = o.batch_size;
  tg::Tensor ev = tg::zeros({2}, tg::kFloat64);
  if (tg::dist::rank() == 0) {
    PrecisionScope autocast(o.precision);  // measured in the precision the run trains in
    ev = tg::tensor(std::vector<double>{evaluate(model, train_ids, train_eval, B, o.device),
                                        evaluate(model, heldout_ids, held_eval, B, o.device)});
  }
  if (tg::dist::world_size() > 1) tg::dist::broadcast(ev, 0);
  const std::vector<double> trhe = ev.to_vector<double>();
  return {trhe[0], trhe[1]};
}

// What the evaluation points of one training run share.
struct Run {
  Gpt& model;
  tg::nn::AdamW& opt;
  tg::nn::CosineWithWarmupLR& sched;
  LoopState& st;
  const CharVocab& vocab;
  const Json& identity;
  const TrainOptions& o;
  Progress& prog;
  MixedPrecision& mp;
  std::string last;  // <out>/last

  // What a stopped run leaves to resume from.
  std::string kept() const {
    return st.r.history.eval_step.empty() ? std::string("no checkpoint was written yet")
                                          : fmt::format("{} holds the checkpoint of step {}", last,
                                                        st.r.history.eval_step.back());
  }

  // One optimizer step on this rank's block of a fresh batch; returns the global batch's loss. A
  // diverged run stops here, before the step, with the last good checkpoint on disk.
  double train_step(const std::vector<int64_t>& ids, const std::vector<tg::Tensor>& params) {
    tg::Tensor loss;
    {
      PrecisionScope autocast(o.precision);  // the forward and the loss; backward runs outside
      loss = batch_loss(model, ids, st.sampler, o);
    }
    const double lv = global_mean(loss);
    if (!std::isfinite(lv))
      throw tg::Error(fmt::format(
          "training diverged: the loss is {} at step {}; {}. Lower --lr (now {}) or clip "
          "(--clip, now {})",
          lv, st.r.step + 1, kept(), o.lr, o.clip));
    if (!mp.backward_and_step(loss, opt, params, o.clip))  // --clip 0: off
      prog.line(fmt::format(
          "step {}: skipped by the f16 loss scaler (inf/NaN gradient); loss scale now {}",
          st.r.step + 1, mp.loss_scale()));
    sched.step();
    return lv;
  }

  // Records the evaluation (train tr, held-out he) at st.r.step: the best model, <out>/last, the
  // progress line; true when early stopping ends the run.
  bool evaluated(double tr, double he, int64_t end) {
    st.r.history.eval_step.push_back(st.r.step);
    st.r.history.eval_train.push_back(tr);
    st.r.history.eval_heldout.push_back(he);
    const bool better = st.r.best_step == 0 || he < st.r.best_heldout;
    if (better) {
      if (tg::dist::rank() == 0) save_best(o.out, model, vocab, st.r.step, he);
      st.r.best_step = st.r.step;
      st.r.best_heldout = he;
      st.bad_evals = 0;
    } else {
      ++st.bad_evals;
    }
    save_last(o.out, [&](const std::string& dir) {
      tg::nn::save_checkpoint_distributed(dir, model, opt, &sched, st.r.step,
                                          st.meta(identity, vocab, model.cfg, mp));
    });
    prog.line(fmt::format("step {}/{}: train {:.4f}, held-out {:.4f} nats/char{}  [lr {:.2e}]",
                          st.r.step, o.steps, tr, he, better ? " (best)" : "",
                          sched.get_last_lr().front()));
    if (o.patience > 0 && st.bad_evals >= o.patience && st.r.step < end) {
      st.r.early_stopped = true;
      prog.line(fmt::format(
          "early stop at step {}: no better held-out loss in {} evaluations (--patience); best "
          "{:.4f} at step {}",
          st.r.step, o.patience, st.r.best_heldout, st.r.best_step));
      return true;
    }
    return false;
  }
};

}  // namespace

TrainResult train(Gpt& model, const std::vector<int64_t>& train_ids,
                  const std::vector<int64_t>& heldout_ids, const CharVocab& vocab,
                  const TrainOptions& o, const Json& identity, Progress& prog) {
  const int64_t T = model.cfg.block, B = o.batch_size;
  const int64_t L = static_cast<int64_t>(train_ids.size());
  const std::vector<int64_t> held_eval =
      eval_starts(static_cast<int64_t>(heldout_ids.size()), T, o.eval_windows, o.seed);
  const std::vector<int64_t> train_eval = eval_starts(L, T, o.eval_windows, o.seed + 1);
  model.to(o.device);  // before the optimizer: its state follows the parameters
  // mpirun -np N: rank 0's weights everywhere, gradients averaged (global batch N x B); rank 0
  // evaluates, decides and writes, every rank draws the same N x B starts and takes its B.
  const int world = tg::dist::world_size(), rank = tg::dist::rank();
  std::unique_ptr<tg::nn::DistributedDataParallel> ddp;
  if (world > 1)
    ddp = std::make_unique<tg::nn::DistributedDataParallel>(
        std::shared_ptr<tg::nn::Module>(std::shared_ptr<tg::nn::Module>(), &model));
  tg::nn::AdamWOptions ao(o.lr);
  ao.betas = {0.9, 0.99};  // nanoGPT's choice for small character models
  ao.weight_decay = o.weight_decay;
  tg::nn::AdamW opt(param_groups(model), ao);
  tg::nn::CosineWithWarmupLR sched(opt, std::min(o.warmup, o.steps), o.steps, o.min_lr_ratio);
  std::vector<tg::Tensor> params = model.parameters();

  LoopState st;
  MixedPrecision mp(o.precision);
  if (!mp.describe().empty()) prog.line(mp.describe());
  Run run{model, opt, sched, st, vocab, identity, o, prog, mp, last_dir(o.out)};
  st.sampler.set_seed(o.seed * 1000003ULL + 0x5a3ULL);
  std::filesystem::create_directories(o.out);
  if (rank == 0) recover_run_folder(o.out);
  if (world > 1) tg::dist::barrier();  // the others read what rank 0 restored
  if (o.resume) {
    const std::string note = resume(run.last, identity, model, opt, sched, st, mp);
    if (!note.empty()) prog.line(note);
    prog.line(fmt::format("resumed {} at step {} of {}", run.last, st.r.step, o.steps));
  }
  const int64_t end = o.max_steps > 0 ? std::min(o.steps, o.max_steps) : o.steps;
  const auto t0 = Clock::now();
  const double seconds_before = st.r.seconds;
  size_t guarded = st.r.history.loss.size();  // losses[:guarded] passed the blown-up check
  prog.start_epoch(1, 1, std::max<int64_t>(end - st.r.step, 0));
  while (st.r.step < end) {
    model.train();
    const double lv = run.train_step(train_ids, params);
    ++st.r.step;
    st.r.history.loss.push_back(lv);
    prog.step(lv, B * world);
    if (st.r.step % o.eval_every != 0 && st.r.step != end) continue;

    // Before any checkpoint: a mean loss far above a uniform guess stops the run like a NaN.
    if (std::string why = blown_up(st.r.history.loss, guarded, vocab.size()); !why.empty())
      throw tg::Error(
          fmt::format("{} (at step {}); {}. Lower --lr (now {}) or clip (--clip, now {})", why,
                      st.r.step, run.kept(), o.lr, o.clip));
    guarded = st.r.history.loss.size();
    // Evaluation (rank 0's, for every rank), best model, checkpoint, early stopping.
    const auto [tr, he] = rank0_evaluation(model, train_ids, train_eval, heldout_ids, held_eval, o);
    st.r.seconds = seconds_before + seconds_since(t0);
    if (run.evaluated(tr, he, end)) break;
  }
  st.r.seconds = seconds_before + seconds_since(t0);
  st.r.skipped_steps = mp.skipped_steps();
  prog.end_epoch(
      fmt::format("trained to step {} in {:.1f}s; best held-out {:.4f} nats/char at "
                  "step {}",
                  st.r.step, st.r.seconds, st.r.best_heldout, st.r.best_step));
  model.to(tg::kCPU);
  return st.r;
}

SavedModel load_best(const std::string& out) {
  const std::string path = out + "/best/model.safetensors";
  if (!file_exists(path))
    throw UserError(fmt::format(
        "{}: no trained model there (missing best/model.safetensors); train first, e.g. gpt "
        "--out {}",
        out, out));
  tg::nn::SafetensorsFile f;
  try {
    f = tg::nn::load_safetensors(path);
  } catch (const tg::Error& e) {
    throw UserError(fmt::format("cannot read {}: {}", path, e.what()));
  }
  SavedModel s;
  s.cfg = GptConfig::from_json(meta_json(f.metadata, "gpt.config", path), path);
  auto v = f.metadata.find("gpt.vocab");
  if (v == f.metadata.end()) throw UserError(path + ": no gpt.vocab metadata");
  s.vocab = CharVocab::from_json(v->second, path);
  if (s.vocab.size() != s.cfg.vocab_size)
    throw UserError(fmt::format("{}: the vocabulary has {} characters but the model {}", path,
                                s.vocab.size(), s.cfg.vocab_size));
  s.cfg.validate(path);  // a bad saved value names this file and its field, not an option
  s.model = std::make_shared<Gpt>(s.cfg);
  try {
    s.model->load_state_dict(f.tensors);
  } catch (const tg::Error& e) {
    throw UserError(fmt::format("{}: does not fit the model it names: {}", path, e.what()));
  }
  require_finite_weights(*s.model, path, "refusing to use it");
  auto step = f.metadata.find("gpt.step");
  if (step != f.metadata.end()) s.step = parse_int(step->second).value_or(0);
  s.model->eval();
  return s;
}

}  // namespace tgx::gpt
