// nn/checkpoint.hpp — safetensors files (read, write, load into a module) and training
// checkpoints (model + optimizer + scheduler + RNG state) that resume a run bit for bit.
//
// ---- safetensors ------------------------------------------------------------------------------
// The layout of Hugging Face's safetensors (the Rust crate is the reference implementation):
//   u64 little endian N | N bytes of JSON header, padded with spaces to a multiple of 8 | data
// The header is an object {"__metadata__": {str: str}, "name": {"dtype": "F32", "shape": [2, 3],
// "data_offsets": [begin, end]}, ...}; offsets count from the start of the data section. We read
// and write F32, F64, BF16, F16, I64 and BOOL (kBFloat16 and kFloat16 tensors read and write bit
// for bit; other dtypes, e.g. I8 or F8_E4M3, are rejected as unsupported). Writing: compact JSON,
// "__metadata__" first (left out when the map is empty, like the reference's None), then the
// tensors in StateDict order, each entry's keys in the order dtype, shape, data_offsets, and the
// data packed back to back in that same order. (The reference sorts tensors by dtype alignment then
// name; any order with contiguous coverage is valid and every reader accepts it.) Files are written
// through tg::write_file_atomic (tmp + fsync + rename). Reading validates everything before
// allocating a tensor, and every problem is a tg::Error naming the file and, where one is involved,
// the tensor. Like the Rust crate: a header longer than 100,000,000 bytes is refused; the tensors
// sorted by offsets must cover the data section exactly (each begin equals the previous end, the
// last end is the end of the file) — a gap, an overlap or trailing bytes is an error. Stricter than
// the crate: duplicate JSON keys (at any level) are refused instead of last-one-wins, and the
// header must be an object. Like the crate, unknown fields inside a tensor entry are ignored. BOOL
// bytes must be 0 or 1. Integrity: our writer adds to __metadata__ one key per tensor,
// "tapegrad.crc32.<name>" = the CRC-32 (zlib's) of its data bytes as 8 hex digits, replacing any
// such key the caller passed. Reading verifies every checksum present and names the file and the
// tensor on a mismatch; a file without them (written by another tool) is read unchecked. The
// checksum keys are not returned in SafetensorsFile::metadata; every other metadata entry
// round-trips unchanged.
//
// ---- training checkpoints ---------------------------------------------------------------------
// save_checkpoint(dir, ...) creates dir (and its parents) and writes two safetensors files:
//   dir/model.safetensors           the model's state_dict() under its own names; metadata
//                                   tapegrad.format = "model/1", tapegrad.run_id, tapegrad.step,
//                                   and every extra entry under its own key.
//   dir/training_state.safetensors  tensors "state.<param index>.<name>" (optimizer state, e.g.
//                                   state.0.exp_avg; the index counts parameters across groups
//                                   like OptimizerState); metadata (every number written with
//                                   shortest round-trip decimals, so it reads back exactly):
//     tapegrad.format = "training_state/1", tapegrad.run_id, tapegrad.step
//     optimizer = "AdamW"; optimizer.num_groups = "2"
//     optimizer.group.<g>.params = "0,1"; optimizer.group.<g>.option.<name> = "0.001"
//     optimizer.state_params = "0,1,2,3" (parameters that have state)
//     optimizer.state.<i>.number.<name> = "20" (per-parameter numbers, e.g. step)
//     scheduler = "none" | "present"; scheduler.last_epoch, scheduler.base_lrs,
//     scheduler.last_lrs (comma-separated)
//     rng.default = tg::default_generator().get_state()
//     extra.<key> = value for every extra entry
// The model file is written first, then the training state; both carry the same random run id
// and the step. A crash between the two leaves files with different run ids, which
// load_checkpoint refuses to load ("do not belong together") instead of resuming silently from
// a mismatched pair. (Saving each checkpoint to its own directory, e.g. ckpt-<step>, keeps the
// previous one loadable through any crash; overwriting one directory in place may leave a pair
// that is refused, never one that loads wrong.) load_checkpoint checks everything it can before
// changing anything; if the scheduler or the model fails to load after the optimizer was
// replaced, the optimizer and scheduler are put back. Not saved: train/eval mode (set it in
// code), gradients, and generators other than tg::default_generator().
#pragma once

#include "nn/module.hpp"
#include "nn/optim.hpp"
#include "nn/schedule.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace tg::nn {

using Metadata = std::map<std::string, std::string>;
inline constexpr const char* kChecksumPrefix = "tapegrad.crc32.";

struct SafetensorsFile {
  StateDict tensors;  // in data-offset order (the order they were written)
  Metadata metadata;
};

// Every tensor must be defined (CUDA tensors are copied to the host); names must be non-empty,
// unique and not
// "__metadata__".
void save_safetensors(const std::string& path, const StateDict& tensors,
                      const Metadata& metadata = {});
SafetensorsFile load_safetensors(const std::string& path);
// The bytes save_safetensors writes (for tests and for writing elsewhere); `what` names the
// target in error messages.
std::string safetensors_bytes(const StateDict& tensors, const Metadata& metadata,
                              const std::string& what);
// A dtype's safetensors name ("F32", "BF16", ...) and back (an error for a name tapegrad has no
// dtype for).
const char* safetensors_dtype(DType t);
DType dtype_from_safetensors(const std::string& code);

// Parses a whole file held in memory; `what` names it in error messages.
SafetensorsFile parse_safetensors(const std::string& bytes, const std::string& what);

// The header of a whole file held in memory (a memory-mapped one: nn/hf reads tensors in place),
// validated as load_safetensors validates a file — header, shapes, offsets, coverage, checksums,
// BOOL bytes, every error naming `what` and the tensor.
struct SafetensorsEntry {
  std::string name;
  std::string dtype;  // "F32", "F64", "I64", "BOOL", "F16" or "BF16"
  Shape shape;
  uint64_t begin = 0, end = 0;  // byte offsets into the data section
};
struct SafetensorsHeader {
  std::vector<SafetensorsEntry> entries;  // in data-offset order
  Metadata metadata;                      // without the checksum keys
  uint64_t data_offset = 0;               // where the data section starts in the file
};
SafetensorsHeader parse_safetensors_header(const char* bytes, size_t size, const std::string& what);

// Loads a safetensors file into a module with Module::load_state_dict's checks (missing and
// unexpected keys when strict, shape and dtype of every shared key, all reported at once), the
// message prefixed with the file name. With convert_dtypes, a floating tensor whose dtype
// differs from the module's is converted (float32 <-> float64); other mismatches still throw.
LoadResult load_model(const std::string& path, Module& model, bool strict = true,
                      bool convert_dtypes = false);

// ---- training checkpoints ----
struct CheckpointInfo {
  int64_t step = 0;
  std::string run_id;  // 16 hex digits, new for every save
  Metadata extra;      // the extra metadata given to save_checkpoint
};
std::string checkpoint_model_path(const std::string& dir);  // dir/model.safetensors
std::string checkpoint_state_path(const std::string& dir);  // dir/training_state.safetensors

// scheduler may be null (no scheduler). extra keys must not start with "tapegrad.".
void save_checkpoint(const std::string& dir, const Module& model, const Optimizer& optimizer,
                     const LRScheduler* scheduler, int64_t step, const Metadata& extra = {});
// Restores the model's weights, the optimizer's state and hyperparameters, the scheduler and
// (when restore_rng) tg::default_generator(). The model and optimizer must have the structure
// of the saved ones; a scheduler must be given exactly when one was saved.
CheckpointInfo load_checkpoint(const std::string& dir, Module& model, Optimizer& optimizer,
                               LRScheduler* scheduler, bool restore_rng = true);

}  // namespace tg::nn
