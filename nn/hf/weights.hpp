// nn/hf/weights.hpp — the tensors of a Hugging Face model folder, memory-mapped: model.safetensors,
// or the shards model.safetensors.index.json's weight_map names. Every file is mapped
// (MAP_PRIVATE, read and write: a parameter written in place, by training, copies its page and
// never reaches the file) and validated whole when the folder is opened (nn/checkpoint.hpp's
// parse_safetensors_header: offsets, coverage, checksums; the index: every listed tensor in its
// shard, every shard's tensor listed), so a bad folder is refused before any tensor is made.
// tensor(name, dtype) wraps the mapped bytes with tg::from_blob when the file's dtype is the one
// asked for (no copy; the mapping lives as long as any tensor on it: F32, F64, BF16 and F16 alike),
// and converts otherwise (.to(); BF16 / F16 into float32 parameters through the one conversion
// path, autograd/convert.hpp).
// load_into() is the strict name map from a folder to a module.
// Deliberately not here: config.json (config.hpp), the model families.
#pragma once

#include "nn/checkpoint.hpp"
#include "nn/hf/pretrained.hpp"
#include "nn/init.hpp"
#include "nn/module.hpp"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tg::nn::hf {

class SafetensorsFolder {
 public:
  explicit SafetensorsFolder(const std::string& folder);
  const std::string& folder() const { return folder_; }
  std::vector<std::string> names() const;  // every tensor, file by file in offset order
  bool contains(const std::string& name) const { return where_.count(name) != 0; }
  const SafetensorsEntry& entry(const std::string& name) const;
  const std::string& file_of(const std::string& name) const;  // its file's path
  // The tensor as `dtype` (a floating dtype): mapped in place when the file holds that dtype
  // (and the bytes are aligned to it), else converted into fresh memory.
  Tensor tensor(const std::string& name, DType dtype) const;
  // A folder shares its mappings with the tensors it hands out mapped: read each tensor once
  // (a second read sees the in-place writes made through the first).
  // The tensor's values written into dst (a floating CPU tensor of its shape), converted to
  // dst's dtype: 16-bit floats widen straight into a contiguous float32 dst.
  void read_into(const std::string& name, Tensor& dst) const;

 private:
  struct File;
  void open_file(const std::string& path);
  void check_index(const std::string& index_path);
  std::string folder_;
  std::vector<std::shared_ptr<File>> files_;
  std::map<std::string, std::pair<size_t, size_t>> where_;  // name -> (file, entry)
};

// How a family's file names meet its module's state_dict names.
struct NameMap {
  // The file's name as the module calls it ("" to skip the tensor: buffers a file may carry,
  // such as GPT-2's attn.bias); identity when unset.
  std::function<std::string(const std::string&)> to_module;
  std::vector<std::string> tied;  // module names not read from files (a tied lm_head.weight)
};

// The strict name map at work, one submodule at a time: load(m, prefix) checks every
// state_dict entry of m (its name prefix + the entry's) against the folder — missing, mis-shaped,
// not floating — and, when nothing was wrong so far and `swap`, replaces each parameter's and
// buffer's storage in place by the folder's tensor (its handle, and so ties and optimizers,
// kept): PyTorch's param.data = t. finish() adds the folder's tensors no load asked for
// (unexpected) and throws every problem at once, each naming its file and tensor.
// from_pretrained loads each block as soon as it is built (the memory of its placeholder
// parameters is reused by the next block's); load_into checks the whole model first.
// Loading writes a parameter's values into its own memory when they must be converted anyway
// (BF16 into float32) or with copy; else (the file holds the parameter's dtype) the mapped tensor
// becomes the parameter's storage, with no copy. With `as` (weight-only reduced precision) every
// loaded parameter becomes the folder's tensor in dtype `as` instead, its handle's dtype changed
// (PyTorch's param.data = t.to(as)): mapped when the file holds `as`, and its float32
// placeholder's pages handed back to the system.
class WeightLoader {
 public:
  WeightLoader(const SafetensorsFolder& folder, NameMap map);
  void load(Module& m, const std::string& prefix, bool swap = true, bool copy = false,
            std::optional<DType> as = std::nullopt);
  void finish() const;

 private:
  const SafetensorsFolder& folder_;
  NameMap map_;
  std::map<std::string, std::string> source_;  // module name -> file name
  std::set<std::string> wanted_;               // module names a load asked for
  std::vector<std::string> errs_;
};

// Loads every parameter and buffer of `model` from the folder, all or nothing: every problem is
// found before any storage is replaced, so a refused load leaves the model as it was.
void load_into(Module& model, const SafetensorsFolder& folder, const NameMap& map);

// from_pretrained's build and load: make(hook) builds the model, calling hook with each block.
// Parameters are placeholders (init skipped: each is replaced). In float32, and in weight-only
// reduced precision (parameters of the reduced dtype, float32 everything else), each block is
// loaded as soon as it is built; in another dtype the model is converted, then loaded whole.
template <typename M, typename Make>
std::shared_ptr<M> build_and_load(const SafetensorsFolder& files, const NameMap& map, DType dtype,
                                  Make make, bool weight_only = false) {
  init::SkipInitGuard skip;
  if (dtype == kFloat32 || weight_only) {
    WeightLoader w(files, map);
    // A block built once is copied into its placeholders (their memory would stay in the
    // allocator's cache); the repeated ones are mapped (the next block's placeholders reuse
    // the memory of the one before). Weight-only: every block's parameters become the file's
    // reduced tensors, mapped.
    std::shared_ptr<M> m = make([&](Module& block, const std::string& p, bool repeated) {
      if (weight_only)
        w.load(block, p, true, false, dtype);
      else
        w.load(block, p, true, !repeated);
    });
    w.finish();
    return m;
  }
  std::shared_ptr<M> m = make(BuildHook());
  m->to(dtype);
  load_into(*m, files, map);
  return m;
}

}  // namespace tg::nn::hf
