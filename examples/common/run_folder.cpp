// examples/common/run_folder.cpp — the folder swap behind <out>/last and its recovery.
#include "common/run_folder.hpp"

#include "nn/checkpoint.hpp"
#include "nn/dist/dist.hpp"

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <regex>
#include <vector>

namespace fs = std::filesystem;

namespace tgx {

std::string last_dir(const std::string& out) { return out + "/last"; }

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

}  // namespace tgx
