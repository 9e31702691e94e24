// nn/checkpoint.cpp — training checkpoints: a model file and a training-state file (optimizer,
// scheduler, generator) sharing a run id, both safetensors (nn/safetensors.cpp). Layout and
// metadata keys are described in nn/checkpoint.hpp.
#include "nn/checkpoint.hpp"

#include "autograd/io.hpp"
#include "autograd/tape.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

namespace tg::nn {

// ---- training checkpoints ---------------------------------------------------------------------

namespace {

constexpr const char* kModelFormat = "model/1";
constexpr const char* kStateFormat = "training_state/1";

std::string num(double v) { return fmt::format("{}", v); }  // shortest round-trip decimals

template <typename T>
std::string join(const std::vector<T>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + num(static_cast<double>(v[i]));
  return s;
}

std::string new_run_id() {
  std::random_device rd;  // not the global generator: saving must not move its state
  uint64_t v = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  return fmt::format("{:016x}", v);
}

// Metadata lookups and number parsing for one checkpoint file.
struct MetaReader {
  const Metadata& m;
  const std::string& file;
  [[noreturn]] void fail(const std::string& msg) const {
    throw Error(fmt::format("load_checkpoint: {}: {}", file, msg));
  }
  const std::string& get(const std::string& key) const {
    auto it = m.find(key);
    if (it == m.end()) fail(fmt::format("metadata has no \"{}\"", key));
    return it->second;
  }
  double number(const std::string& key, const std::string& s) const {
    errno = 0;
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size() || errno == ERANGE)
      fail(fmt::format("metadata \"{}\" holds \"{}\", not a number", key, s));
    return v;
  }
  double number(const std::string& key) const { return number(key, get(key)); }
  int64_t integer(const std::string& key, const std::string& s) const {
    double v = number(key, s);
    if (v != static_cast<double>(static_cast<int64_t>(v)))
      fail(fmt::format("metadata \"{}\" holds \"{}\", not an integer", key, s));
    return static_cast<int64_t>(v);
  }
  int64_t integer(const std::string& key) const { return integer(key, get(key)); }
  std::vector<double> numbers(const std::string& key) const {
    std::vector<double> out;
    std::string s = get(key), item;
    if (s.empty()) return out;
    std::istringstream is(s);
    while (std::getline(is, item, ',')) out.push_back(number(key, item));
    return out;
  }
  std::vector<int64_t> integers(const std::string& key) const {
    std::vector<int64_t> out;
    std::istringstream is(get(key));
    std::string item;
    while (std::getline(is, item, ',')) out.push_back(integer(key, item));
    return out;
  }
};

Metadata training_metadata(const LRScheduler* sched, const std::string& id, int64_t step,
                           const Metadata& extra, const OptimizerState& os) {
  Metadata m{{"tapegrad.format", kStateFormat},
             {"tapegrad.run_id", id},
             {"tapegrad.step", std::to_string(step)},
             {"optimizer", os.optimizer},
             {"optimizer.num_groups", std::to_string(os.param_groups.size())}};
  for (size_t g = 0; g < os.param_groups.size(); ++g) {
    std::string p = fmt::format("optimizer.group.{}.", g);
    m[p + "params"] = join(os.param_groups[g].params);
    for (const auto& [k, v] : os.param_groups[g].options) m[p + "option." + k] = num(v);
  }
  std::vector<int64_t> with_state;
  for (const auto& [i, ps] : os.state) {
    with_state.push_back(i);
    for (const auto& [k, v] : ps.numbers)
      m[fmt::format("optimizer.state.{}.number.{}", i, k)] = num(v);
  }
  m["optimizer.state_params"] = join(with_state);
  m["scheduler"] = sched ? "present" : "none";
  if (sched) {
    SchedulerState s = sched->state_dict();
    m["scheduler.last_epoch"] = std::to_string(s.last_epoch);
    m["scheduler.base_lrs"] = join(s.base_lrs);
    m["scheduler.last_lrs"] = join(s.last_lrs);
  }
  m["rng.default"] = default_generator().get_state();
  for (const auto& [k, v] : extra) m["extra." + k] = v;
  return m;
}

}  // namespace

std::string checkpoint_model_path(const std::string& dir) { return dir + "/model.safetensors"; }
std::string checkpoint_state_path(const std::string& dir) {
  return dir + "/training_state.safetensors";
}

void save_checkpoint(const std::string& dir, const Module& model, const Optimizer& optimizer,
                     const LRScheduler* scheduler, int64_t step, const Metadata& extra) {
  for (const auto& [k, v] : extra)
    if (k.rfind("tapegrad.", 0) == 0)
      throw Error(
          fmt::format("save_checkpoint: {}: extra key \"{}\" uses the reserved prefix "
                      "\"tapegrad.\"",
                      dir, k));
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error(fmt::format("save_checkpoint: cannot create {}: {}", dir, ec.message()));
  const std::string id = new_run_id();
  OptimizerState os = optimizer.state_dict();
  StateDict state;
  for (const auto& [i, ps] : os.state)
    for (const auto& [k, t] : ps.tensors) state.insert(fmt::format("state.{}.{}", i, k), t);
  Metadata mm = extra;
  mm["tapegrad.format"] = kModelFormat;
  mm["tapegrad.run_id"] = id;
  mm["tapegrad.step"] = std::to_string(step);
  // Build both files' bytes first: a bad argument then fails before anything is written.
  std::string model_bytes = safetensors_bytes(model.state_dict(), mm, checkpoint_model_path(dir));
  std::string state_bytes = safetensors_bytes(
      state, training_metadata(scheduler, id, step, extra, os), checkpoint_state_path(dir));
  write_file_atomic(checkpoint_model_path(dir), model_bytes);
  write_file_atomic(checkpoint_state_path(dir), state_bytes);
}

namespace {

OptimizerState read_optimizer_state(const MetaReader& r, const StateDict& tensors) {
  OptimizerState os;
  os.optimizer = r.get("optimizer");
  int64_t ng = r.integer("optimizer.num_groups");
  if (ng < 0 || ng > 1'000'000) r.fail(fmt::format("optimizer.num_groups is {}", ng));
  for (int64_t g = 0; g < ng; ++g) {
    std::string p = fmt::format("optimizer.group.{}.", g);
    OptimizerState::Group grp;
    grp.params = r.integers(p + "params");
    const std::string opt_prefix = p + "option.";
    for (auto it = r.m.lower_bound(opt_prefix);
         it != r.m.end() && it->first.rfind(opt_prefix, 0) == 0; ++it)
      grp.options[it->first.substr(opt_prefix.size())] = r.number(it->first);
    os.param_groups.push_back(std::move(grp));
  }
  for (int64_t i : r.integers("optimizer.state_params")) {
    ParamState& ps = os.state[i];
    const std::string np = fmt::format("optimizer.state.{}.number.", i);
    for (auto it = r.m.lower_bound(np); it != r.m.end() && it->first.rfind(np, 0) == 0; ++it)
      ps.numbers[it->first.substr(np.size())] = r.number(it->first);
  }
  for (const auto& [name, t] : tensors) {
    // "state.<index>.<name>"
    size_t dot = name.find('.', 6);
    int64_t index = -1;
    if (name.rfind("state.", 0) == 0 && dot != std::string::npos && dot + 1 < name.size()) {
      std::string idx = name.substr(6, dot - 6);
      if (!idx.empty() && idx.find_first_not_of("0123456789") == std::string::npos &&
          idx.size() < 18)
        index = std::stoll(idx);
    }
    if (index < 0) r.fail(fmt::format("tensor \"{}\" is not named state.<index>.<name>", name));
    if (!os.state.count(index))
      r.fail(
          fmt::format("tensor \"{}\" belongs to parameter {}, which is not in "
                      "optimizer.state_params",
                      name, index));
    os.state[index].tensors[name.substr(dot + 1)] = t;
  }
  return os;
}

// The two files' formats, and their run and step, which must agree; the extra.* metadata.
CheckpointInfo read_info(const std::string& dir, const MetaReader& mr, const MetaReader& sr) {
  if (mr.get("tapegrad.format") != kModelFormat)
    mr.fail(fmt::format("tapegrad.format is \"{}\", expected \"{}\"", mr.get("tapegrad.format"),
                        kModelFormat));
  if (sr.get("tapegrad.format") != kStateFormat)
    sr.fail(fmt::format("tapegrad.format is \"{}\", expected \"{}\"", sr.get("tapegrad.format"),
                        kStateFormat));
  CheckpointInfo info;
  info.run_id = sr.get("tapegrad.run_id");
  info.step = sr.integer("tapegrad.step");
  if (mr.get("tapegrad.run_id") != info.run_id || mr.integer("tapegrad.step") != info.step)
    throw Error(fmt::format(
        "load_checkpoint: {}: model.safetensors (run {}, step {}) and training_state.safetensors "
        "(run {}, step {}) do not belong together (was a save interrupted?)",
        dir, mr.get("tapegrad.run_id"), mr.get("tapegrad.step"), info.run_id, info.step));
  for (const auto& [k, v] : sr.m)
    if (k.rfind("extra.", 0) == 0) info.extra[k.substr(6)] = v;
  return info;
}

// The scheduler's state, present exactly when a scheduler was given.
SchedulerState read_scheduler_state(const MetaReader& sr, bool given) {
  const bool has_sched = sr.get("scheduler") == "present";
  if (has_sched != given)
    sr.fail(has_sched ? "the checkpoint has scheduler state but no scheduler was given"
                      : "a scheduler was given but the checkpoint has no scheduler state");
  SchedulerState ss;
  if (has_sched) {
    ss.last_epoch = sr.integer("scheduler.last_epoch");
    ss.base_lrs = sr.numbers("scheduler.base_lrs");
    ss.last_lrs = sr.numbers("scheduler.last_lrs");
  }
  return ss;
}

}  // namespace

CheckpointInfo load_checkpoint(const std::string& dir, Module& model, Optimizer& optimizer,
                               LRScheduler* scheduler, bool restore_rng) {
  const std::string mpath = checkpoint_model_path(dir), spath = checkpoint_state_path(dir);
  SafetensorsFile mf = load_safetensors(mpath);
  SafetensorsFile sf = load_safetensors(spath);
  MetaReader mr{mf.metadata, mpath}, sr{sf.metadata, spath};
  CheckpointInfo info = read_info(dir, mr, sr);

  // Everything is parsed and checked before anything changes.
  OptimizerState os = read_optimizer_state(sr, sf.tensors);
  SchedulerState ss = read_scheduler_state(sr, scheduler != nullptr);
  const std::string& rng = sr.get("rng.default");
  if (restore_rng) {
    Generator probe;
    try {
      probe.set_state(rng);
    } catch (const Error& e) {
      sr.fail(fmt::format("rng.default: {}", e.what()));
    }
  }

  NoGradGuard ng;
  OptimizerState old_opt = optimizer.state_dict();
  SchedulerState old_sched = scheduler ? scheduler->state_dict() : SchedulerState{};
  try {
    optimizer.load_state_dict(os);
  } catch (const Error& e) {
    sr.fail(e.what());
  }
  try {
    if (scheduler) {
      scheduler->load_state_dict(ss);
      if (scheduler->get_last_lr() != ss.last_lrs)
        sr.fail(
            fmt::format("the scheduler gives lrs [{}] at step {}, the checkpoint has [{}]: it "
                        "is not the scheduler that was saved",
                        join(scheduler->get_last_lr()), ss.last_epoch, join(ss.last_lrs)));
    }
    try {
      model.load_state_dict(mf.tensors, true);
    } catch (const Error& e) {
      mr.fail(e.what());
    }
  } catch (...) {
    optimizer.load_state_dict(old_opt);
    if (scheduler) scheduler->load_state_dict(old_sched);
    throw;
  }
  if (restore_rng) default_generator().set_state(rng);
  return info;
}

}  // namespace tg::nn
