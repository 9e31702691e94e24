// examples/common/run_folder.cpp — the folder swap behind <out>/last and its recovery.
#include "common/run_folder.hpp"

#include "common/cli.hpp"
#include "common/guard.hpp"

#include "nn/checkpoint.hpp"
#include "nn/checkpoint_distributed.hpp"
#include "nn/dist/dist.hpp"

#include <signal.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <vector>

namespace fs = std::filesystem;

namespace tgx {

std::string last_dir(const std::string& out) { return out + "/last"; }

std::string checkpoint_left(const std::string& out) {
  return fs::exists(tg::nn::checkpoint_model_path(last_dir(out)))
             ? fmt::format("the last checkpoint, {}, is from before it", last_dir(out))
             : std::string("no checkpoint was written yet");
}

void save_last(const std::string& out, const std::function<void(const std::string& dir)>& write) {
  const std::string last = last_dir(out), fresh = out + "/last.new", old = out + "/last.old";
  const bool writer = tg::dist::rank() == 0;
  if (writer) fs::remove_all(fresh);
  write(fresh);
  if (!writer) return;
  fs::remove_all(old);
  if (fs::exists(last)) fs::rename(last, old);
  fs::rename(fresh, last);  // a kill before this line: recover_run_folder takes last.new
  fs::remove_all(old);
}

namespace {
bool complete_checkpoint(const std::string& dir) {
  try {
    auto m = tg::nn::load_safetensors(tg::nn::checkpoint_model_path(dir)).metadata;
    auto t = tg::nn::load_safetensors(tg::nn::checkpoint_state_path(dir)).metadata;
    return m.count("tapegrad.run_id") && t.count("tapegrad.run_id") &&
           m.at("tapegrad.run_id") == t.at("tapegrad.run_id");
  } catch (const std::exception&) {
    return false;
  }
}
}  // namespace

void recover_run_folder(const std::string& out) {
  if (!fs::is_directory(out)) return;
  const std::string last = last_dir(out);
  if (!fs::exists(last)) {
    for (const char* cand : {"/last.new", "/last.old"})
      if (fs::exists(out + cand) && complete_checkpoint(out + cand)) {
        fs::rename(out + cand, last);
        break;
      }
  }
  static const std::regex tmp_name(R"(.*\.tmp\.([0-9]+)$)");
  std::vector<fs::path> stale;
  for (const auto& e : fs::recursive_directory_iterator(out)) {
    std::smatch m;
    const std::string name = e.path().filename().string();
    if (!e.is_regular_file() || !std::regex_match(name, m, tmp_name)) continue;
    const long long pid = std::stoll(m[1].str());
    if (pid != ::getpid() && ::kill(static_cast<pid_t>(pid), 0) != 0) stale.push_back(e.path());
  }
  for (const fs::path& p : stale) fs::remove(p);
}

std::vector<std::string> common_run_files() {
  std::vector<std::string> files = {"metrics.json", "best/model.safetensors"};
  for (const char* dir : {"last", "last.new", "last.old"})
    for (const char* f : {"model.safetensors", "training_state.safetensors"})
      files.push_back(std::string(dir) + "/" + f);
  return files;
}

void claim_run_folder(const std::string& out, bool resume, bool overwrite,
                      const std::vector<std::string>& own) {
  if (resume && overwrite)
    throw UserError(
        "--resume and --overwrite contradict each other: --resume continues the run "
        "in --out, --overwrite starts a new one there");
  if (resume || !fs::is_directory(out)) return;
  std::vector<std::string> found;
  for (const char* name : {"last/model.safetensors", "last.new/model.safetensors",
                           "last.old/model.safetensors", "best/model.safetensors", "metrics.json"})
    if (fs::exists(fs::path(out) / name)) found.push_back(name);
  if (found.empty()) return;
  if (!overwrite)
    throw UserError(fmt::format(
        "--out {} holds a run ({}): continue it with --resume, replace it with --overwrite, or "
        "choose another --out",
        out, fmt::join(found, ", ")));
  std::vector<fs::path> parents;
  for (const std::string& rel : own) {
    const fs::path p = fs::path(out) / rel;
    if (fs::is_regular_file(fs::symlink_status(p))) fs::remove(p);
    for (fs::path d = fs::path(rel).parent_path(); !d.empty(); d = d.parent_path())
      parents.push_back(fs::path(out) / d);  // inside out only, never out itself
  }
  // Deepest first; a folder that still holds something that is not ours stays.
  std::sort(parents.begin(), parents.end(), [](const fs::path& a, const fs::path& b) {
    return a.string().size() > b.string().size();
  });
  for (const fs::path& d : parents) {
    std::error_code ec;
    if (fs::is_directory(d, ec) && fs::is_empty(d, ec)) fs::remove(d, ec);
  }
}

tg::nn::CheckpointInfo resume_checkpoint(const std::string& dir, tg::nn::Module& model,
                                         tg::nn::Optimizer& optimizer,
                                         tg::nn::LRScheduler& scheduler) {
  tg::nn::CheckpointInfo info;
  try {
    info = tg::nn::load_checkpoint_distributed(dir, model, optimizer, &scheduler);
  } catch (const tg::Error& e) {
    throw UserError(fmt::format("--resume: {}", e.what()));
  }
  require_finite_weights(model, "--resume: " + dir,
                         "refusing to resume from it (start a new run with --overwrite)");
  return info;
}

}  // namespace tgx
