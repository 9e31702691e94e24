// examples/common/config_json.hpp — reading and comparing the model configs that the examples
// keep in their checkpoints' metadata (JSON objects of numbers and flags).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace tgx {

// j[key] as an integer; UserError "<what>: model config lacks integer field '<key>'" otherwise.
int64_t config_int(const nlohmann::json& j, const char* key, const std::string& what);
// "layers 2 vs 3, ff 256 vs 512": the fields of a whose values differ in b ("" when none).
std::string config_differences(const nlohmann::json& a, const nlohmann::json& b);

}  // namespace tgx
