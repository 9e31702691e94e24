// tests/examples/text_classification/tiny_run.hpp — the classifier's tiny, fast smoke
// configuration on the committed spam sample, shared by its training and precision tests: a fresh
// run folder, the arguments, the run's metrics.json.
#pragma once

#include "common/text.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

namespace tgt::cls {

inline const std::string kFix = std::string(TG_FIXTURES) + "/examples/text_classification";

// TG_BINARY_DIR/tmp_cls_<name>, emptied.
inline std::string fresh_dir(const std::string& name) {
  std::string d = std::string(TG_BINARY_DIR) + "/tmp_cls_" + name;
  std::filesystem::remove_all(d);
  return d;
}

inline std::vector<std::string> tiny(const std::string& out, std::vector<std::string> more = {}) {
  std::vector<std::string> a = {"--data-dir", kFix + "/spam", "--out", out,
                                "--quiet",    "--epochs",     "6",     "--batch-size",
                                "8",          "--lr",         "3e-3",  "--d-model",
                                "16",         "--layers",     "1",     "--heads",
                                "2",          "--ff",         "32",    "--max-len",
                                "48",         "--vocab-size", "400",   "--seed",
                                "3",          "--patience",   "0",     "--save-every",
                                "2",          "--dropout",    "0.1"};
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

inline nlohmann::json metrics(const std::string& out) {
  return nlohmann::json::parse(tgx::read_file(out + "/metrics.json"));
}

inline double mean(const std::vector<double>& v, size_t from, size_t n) {
  return std::accumulate(v.begin() + from, v.begin() + from + n, 0.0) / static_cast<double>(n);
}

}  // namespace tgt::cls
