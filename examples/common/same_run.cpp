// examples/common/same_run.cpp — the run identity check of --resume (see same_run.hpp).
#include "common/same_run.hpp"

#include "common/cli.hpp"

#include <fmt/format.h>

#include <vector>

namespace tgx {

nlohmann::json meta_json(const tg::nn::Metadata& m, const std::string& key, const std::string& what,
                         const std::string& program) {
  auto it = m.find(key);
  nlohmann::json j =
      it == m.end() ? nlohmann::json() : nlohmann::json::parse(it->second, nullptr, false);
  if (it == m.end() || j.is_discarded())
    throw UserError(fmt::format("{}: not a checkpoint of the {} program (no valid '{}' metadata)",
                                what, program, key));
  return j;
}

void check_same_run(const nlohmann::json& saved, const nlohmann::json& now,
                    const std::string& what) {
  std::vector<std::string> diffs;
  for (auto it = now.begin(); it != now.end(); ++it)
    if (!saved.contains(it.key()) || saved[it.key()] != it.value())
      diffs.push_back(fmt::format("{}: checkpoint {}, now {}", it.key(),
                                  saved.contains(it.key()) ? saved[it.key()].dump() : "none",
                                  it.value().dump()));
  if (!diffs.empty())
    throw UserError(fmt::format(
        "--resume: {} is from another run ({}); resume with the same options or use another "
        "--out",
        what, fmt::join(diffs, "; ")));
}

}  // namespace tgx
