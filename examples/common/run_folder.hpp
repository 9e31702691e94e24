// examples/common/run_folder.hpp — the resumable checkpoint of a run folder, shared by the
// training programs: <out>/last/ is replaced by a folder swap (write <out>/last.new, move last to
// last.old, move last.new to last, drop last.old), and recover() mends what a kill at any
// instant of that swap leaves, so --resume always finds the newest complete checkpoint.
#pragma once

#include <functional>
#include <string>

namespace tgx {

// <out>/last, where --resume looks.
std::string last_dir(const std::string& out);
// Calls write(dir) on every rank (it may be collective, like save_checkpoint_distributed; only
// rank 0 of a data-parallel run is expected to write into dir), then swaps dir in as <out>/last
// on rank 0.
void save_last(const std::string& out, const std::function<void(const std::string& dir)>& write);
// Before a run starts (rank 0): if <out>/last is missing but last.new or last.old holds a
// complete checkpoint (both files, one run id), it becomes last/ again (last.new first: it is the
// newer); stale write-ahead files (*.tmp.<pid> of writers no longer alive) are removed.
void recover_run_folder(const std::string& out);

}  // namespace tgx
