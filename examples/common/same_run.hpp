// examples/common/same_run.hpp — what --resume checks before it loads a checkpoint: the run's
// identity (the options that must not change, as JSON) stored in the checkpoint's metadata, read
// back and compared with this run's, every difference named.
//
// Not here: loading the checkpoint (run_folder.hpp).
#pragma once

#include "nn/checkpoint.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace tgx {

// The JSON under `key` in a checkpoint's metadata; UserError "<what>: not a checkpoint of the
// <program> program (no valid '<key>' metadata)" when it is missing or not JSON.
nlohmann::json meta_json(const tg::nn::Metadata& m, const std::string& key, const std::string& what,
                         const std::string& program);

// UserError "--resume: <what> is from another run (<option>: checkpoint <a>, now <b>; ...)"
// unless every key of `now` has the same value in `saved`.
void check_same_run(const nlohmann::json& saved, const nlohmann::json& now,
                    const std::string& what);

}  // namespace tgx
