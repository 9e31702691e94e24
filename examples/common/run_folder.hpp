// examples/common/run_folder.hpp — the resumable checkpoint of a run folder, shared by the
// training programs: <out>/last/ is replaced by a folder swap (write <out>/last.new, move last to
// last.old, move last.new to last, drop last.old), and recover() mends what a kill at any
// instant of that swap leaves, so --resume always finds the newest complete checkpoint, which
// resume_checkpoint loads; and the guard that keeps a fresh run from replacing a finished one
// (claim_run_folder).
#pragma once

#include "nn/checkpoint.hpp"

#include <functional>
#include <string>
#include <vector>

namespace tgx {

// <out>/last, where --resume looks.
std::string last_dir(const std::string& out);
// For the message of a run stopped by a divergence: "the last checkpoint, <out>/last, is from
// before it" when there is one, else "no checkpoint was written yet".
std::string checkpoint_left(const std::string& out);
// Calls write(dir) on every rank (it may be collective, like save_checkpoint_distributed; only
// rank 0 of a data-parallel run is expected to write into dir), then swaps dir in as <out>/last
// on rank 0.
void save_last(const std::string& out, const std::function<void(const std::string& dir)>& write);
// Before a run starts (rank 0): if <out>/last is missing but last.new or last.old holds a
// complete checkpoint (both files, one run id), it becomes last/ again (last.new first: it is the
// newer); stale write-ahead files (*.tmp.<pid> of writers no longer alive) are removed.
void recover_run_folder(const std::string& out);
// --resume from the checkpoint folder dir, on every rank: load_checkpoint_distributed into model,
// optimizer and scheduler (its errors as a UserError "--resume: ..."), then a weight that is not
// finite is refused (require_finite_weights). Returns the checkpoint's info.
tg::nn::CheckpointInfo resume_checkpoint(const std::string& dir, tg::nn::Module& model,
                                         tg::nn::Optimizer& optimizer,
                                         tg::nn::LRScheduler& scheduler);

// The files every training program writes in its run folder (checkpoints in last/, its swap
// folders and best/, metrics.json); a program adds its own (pictures, tokenizer, ...).
std::vector<std::string> common_run_files();
// Before a training run starts, on rank 0 (before any work): a folder that holds a run (a
// model.safetensors in last/, last.new/, last.old/ or best/, or metrics.json) is refused with a
// UserError naming the folder,
// --resume and --overwrite unless `resume` (the caller checks last/ itself) or `overwrite`.
// With overwrite, removes exactly the files named in `own` (paths relative to out; folders among
// their parents are removed once empty) and nothing else, so no part of the old run can pass for
// the new one. --resume with --overwrite is refused as a contradiction.
void claim_run_folder(const std::string& out, bool resume, bool overwrite,
                      const std::vector<std::string>& own);

}  // namespace tgx
