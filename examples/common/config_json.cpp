// examples/common/config_json.cpp — see config_json.hpp.
#include "common/config_json.hpp"

#include "common/cli.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <vector>

namespace tgx {

int64_t config_int(const nlohmann::json& j, const char* key, const std::string& what) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number_integer())
    throw UserError(fmt::format("{}: model config lacks integer field '{}'", what, key));
  return j[key].get<int64_t>();
}

std::string config_differences(const nlohmann::json& a, const nlohmann::json& b) {
  std::vector<std::string> d;
  for (auto it = a.begin(); it != a.end(); ++it)
    if (!b.contains(it.key()) || it.value() != b[it.key()])
      d.push_back(fmt::format("{} {} vs {}", it.key(), it.value().dump(),
                              b.contains(it.key()) ? b[it.key()].dump() : "none"));
  return fmt::format("{}", fmt::join(d, ", "));
}

}  // namespace tgx
