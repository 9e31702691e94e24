// nn/hf/weights.hpp — the tensors of a Hugging Face model folder, memory-mapped: model.safetensors,
// or the shards model.safetensors.index.json's weight_map names. Every file is mapped
// (MAP_PRIVATE, read and write: a parameter written in place, by training, copies its page and
// never reaches the file) and validated whole when the folder is opened (nn/checkpoint.hpp's
// parse_safetensors_header: offsets, coverage, checksums; the index: every listed tensor in its
// shard, every shard's tensor listed), so a bad folder is refused before any tensor is made.
// tensor(name, dtype) wraps the mapped bytes with tg::from_blob when the file's dtype is the one
// asked for (no copy; the mapping lives as long as any tensor on it), and converts otherwise:
// F16 and BF16 through autograd/half.hpp into float32 (until the tensor dtypes kFloat16 /
// kBFloat16 exist: then those files map in place as well), F32 <-> F64 by a cast.
// load_into() is the strict name map from a folder to a module.
// Deliberately not here: config.json (config.hpp), the model families.
#pragma once

#include "nn/checkpoint.hpp"
#include "nn/module.hpp"

#include <functional>
#include <map>
#include <memory>
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

// Loads every parameter and buffer of `model` from the folder: all problems (missing, unexpected,
// mis-shaped, a non-floating dtype) are collected and thrown at once, each naming its file and
// tensor; only then are the tensors made (mapped or converted) and each parameter's storage
// replaced in place (its handle, and so ties and optimizers, kept). A refused load leaves the
// model as it was.
void load_into(Module& model, const SafetensorsFolder& folder, const NameMap& map);

}  // namespace tg::nn::hf
