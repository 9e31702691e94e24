// nn/hf/weights.cpp — memory-mapped safetensors folders and the strict load (see weights.hpp).
#include "nn/hf/weights.hpp"

#include "autograd/half.hpp"
#include "autograd/tape.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace tg::nn::hf {

struct SafetensorsFolder::File {
  std::string path;
  std::shared_ptr<void> map;  // the mapping; munmap when the last tensor on it goes
  size_t size = 0;
  SafetensorsHeader header;
};

namespace {

const char* kSingle = "model.safetensors";
const char* kIndex = "model.safetensors.index.json";

// path mapped whole, private and writable (copy on write); a zero-length file maps to nothing.
std::shared_ptr<void> map_file(const std::string& path, size_t& size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw Error(fmt::format("from_pretrained: cannot open {}: {}", path, std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(fmt::format("from_pretrained: {} is not a regular file", path));
  }
  size = static_cast<size_t>(st.st_size);
  if (size == 0) {
    ::close(fd);
    return std::shared_ptr<void>();
  }
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  const int err = errno;
  ::close(fd);
  if (p == MAP_FAILED)
    throw Error(fmt::format("from_pretrained: cannot map {}: {}", path, std::strerror(err)));
  return std::shared_ptr<void>(p, [size](void* q) { ::munmap(q, size); });
}

// 16-bit floats widened into a fresh float32 tensor.
Tensor widen(const char* p, const Shape& shape, bool bf16) {
  Tensor out = Tensor::empty(shape, kFloat32);
  float* o = out.data<float>();
  const int64_t n = out.numel();
  for (int64_t i = 0; i < n; ++i) {
    uint16_t b;
    std::memcpy(&b, p + 2 * i, 2);
    o[i] = bf16 ? bf16_to_float(b) : f16_to_float(b);
  }
  return out;
}

}  // namespace

SafetensorsFolder::SafetensorsFolder(const std::string& folder) : folder_(folder) {
  namespace fs = std::filesystem;
  const std::string index = folder + "/" + kIndex, single = folder + "/" + kSingle;
  if (fs::exists(index))
    check_index(index);
  else if (fs::exists(single))
    open_file(single);
  else
    throw Error(
        fmt::format("from_pretrained: {} holds neither {} nor {}", folder, kSingle, kIndex));
}

void SafetensorsFolder::open_file(const std::string& path) {
  auto f = std::make_shared<File>();
  f->path = path;
  f->map = map_file(path, f->size);
  f->header = parse_safetensors_header(static_cast<const char*>(f->map.get()), f->size, path);
  for (size_t i = 0; i < f->header.entries.size(); ++i) {
    const std::string& name = f->header.entries[i].name;
    if (where_.count(name))
      throw Error(fmt::format("from_pretrained: tensor \"{}\" is in both {} and {}", name,
                              files_[where_[name].first]->path, path));
    where_[name] = {files_.size(), i};
  }
  files_.push_back(std::move(f));
}

// The index's weight_map names a shard for every tensor: each shard is opened once, and the
// map and the shards must agree exactly.
void SafetensorsFolder::check_index(const std::string& index_path) {
  std::ifstream in(index_path);
  std::ostringstream ss;
  ss << in.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(ss.str());
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("from_pretrained: {}: not valid JSON: {}", index_path, e.what()));
  }
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
    throw Error(fmt::format("from_pretrained: {}: no \"weight_map\" object", index_path));
  std::map<std::string, std::string> map;  // tensor -> shard file name
  std::set<std::string> shards;
  for (const auto& [name, shard] : j["weight_map"].items()) {
    if (!shard.is_string() || shard.get<std::string>().find('/') != std::string::npos)
      throw Error(
          fmt::format("from_pretrained: {}: tensor \"{}\" maps to {}, not a file name in "
                      "the folder",
                      index_path, name, shard.dump()));
    map[name] = shard.get<std::string>();
    shards.insert(map[name]);
  }
  for (const std::string& s : shards) open_file(folder_ + "/" + s);
  for (const auto& [name, shard] : map) {
    if (!contains(name))
      throw Error(
          fmt::format("from_pretrained: {}: tensor \"{}\" is listed in {} but that shard "
                      "does not hold it",
                      folder_ + "/" + shard, name, index_path));
    if (file_of(name) != folder_ + "/" + shard)
      throw Error(fmt::format("from_pretrained: tensor \"{}\" is in {} but {} lists it in {}", name,
                              file_of(name), index_path, shard));
  }
  for (const auto& [name, loc] : where_)
    if (!map.count(name))
      throw Error(fmt::format("from_pretrained: {}: tensor \"{}\" is not in {}'s weight_map",
                              files_[loc.first]->path, name, index_path));
}

std::vector<std::string> SafetensorsFolder::names() const {
  std::vector<std::string> out;
  for (const auto& f : files_)
    for (const auto& e : f->header.entries) out.push_back(e.name);
  return out;
}

const SafetensorsEntry& SafetensorsFolder::entry(const std::string& name) const {
  auto it = where_.find(name);
  if (it == where_.end())
    throw Error(fmt::format("from_pretrained: {}: no tensor \"{}\"", folder_, name));
  return files_[it->second.first]->header.entries[it->second.second];
}

const std::string& SafetensorsFolder::file_of(const std::string& name) const {
  entry(name);
  return files_[where_.at(name).first]->path;
}

Tensor SafetensorsFolder::tensor(const std::string& name, DType dtype) const {
  const SafetensorsEntry& e = entry(name);
  const File& f = *files_[where_.at(name).first];
  char* p = static_cast<char*>(f.map.get()) + f.header.data_offset + e.begin;
  if (e.dtype == "F16" || e.dtype == "BF16") {
    Tensor t = widen(p, e.shape, e.dtype == "BF16");
    return dtype == kFloat32 ? t : t.to(dtype);
  }
  const DType file_dtype = e.dtype == "F32"   ? kFloat32
                           : e.dtype == "F64" ? kFloat64
                           : e.dtype == "I64" ? kInt64
                                              : kBool;
  Tensor t;
  if (reinterpret_cast<uintptr_t>(p) % dtype_size(file_dtype) == 0) {
    t = from_blob(p, e.shape, file_dtype, f.map);
  } else {  // a file of another writer may leave a tensor unaligned: copy it
    t = Tensor::empty(e.shape, file_dtype);
    if (e.end > e.begin) std::memcpy(t.data_ptr(), p, static_cast<size_t>(e.end - e.begin));
  }
  return file_dtype == dtype ? t : t.to(dtype);
}

// ---- load_into ----------------------------------------------------------------------------

namespace {

// Every problem of the name map, each naming the file and the tensor.
std::vector<std::string> check_names(const SafetensorsFolder& folder, const StateDict& sd,
                                     const NameMap& map,
                                     std::map<std::string, std::string>& source) {
  const std::set<std::string> tied(map.tied.begin(), map.tied.end());
  std::vector<std::string> errs;
  for (const std::string& fname : folder.names()) {
    const std::string mname = map.to_module ? map.to_module(fname) : fname;
    if (mname.empty() || tied.count(mname)) continue;
    if (!sd.contains(mname)) {
      errs.push_back(fmt::format("{}: unexpected tensor \"{}\" (the model has no such parameter)",
                                 folder.file_of(fname), fname));
    } else if (source.count(mname)) {
      errs.push_back(fmt::format("{}: tensors \"{}\" and \"{}\" both name parameter \"{}\"",
                                 folder.file_of(fname), source[mname], fname, mname));
    } else {
      source[mname] = fname;
    }
  }
  for (const auto& [mname, t] : sd) {
    if (tied.count(mname)) continue;
    auto it = source.find(mname);
    if (it == source.end()) {
      errs.push_back(fmt::format("{}: missing tensor \"{}\" {}", folder.folder(), mname,
                                 shape_str(t.shape())));
      continue;
    }
    const SafetensorsEntry& e = folder.entry(it->second);
    if (e.shape != t.shape())
      errs.push_back(fmt::format("{}: tensor \"{}\" is {} but the model's \"{}\" is {}",
                                 folder.file_of(it->second), it->second, shape_str(e.shape), mname,
                                 shape_str(t.shape())));
    if (e.dtype == "I64" || e.dtype == "BOOL")
      errs.push_back(fmt::format("{}: tensor \"{}\" is {}, not a floating dtype",
                                 folder.file_of(it->second), it->second, e.dtype));
  }
  return errs;
}

}  // namespace

void load_into(Module& model, const SafetensorsFolder& folder, const NameMap& map) {
  const StateDict sd = model.state_dict();
  std::map<std::string, std::string> source;  // module name -> file name
  std::vector<std::string> errs = check_names(folder, sd, map, source);
  if (!errs.empty()) {
    std::string msg = fmt::format(
        "from_pretrained: {}: {} problem(s), nothing loaded:", folder.folder(), errs.size());
    for (const std::string& e : errs) msg += "\n  " + e;
    throw Error(msg);
  }
  // The live handles (state_dict's are detached copies of them).
  std::map<std::string, Tensor> live;
  for (auto& [n, t] : model.named_parameters()) live[n] = t;
  for (auto& [n, t] : model.named_buffers()) live[n] = t;
  std::vector<std::pair<Tensor, Tensor>> swaps;  // (handle, new values): all made before any swap
  for (const auto& [mname, fname] : source) {
    const Tensor& h = live.at(mname);
    if (h.device().type != DeviceType::CPU)
      throw Error(
          fmt::format("from_pretrained: parameter \"{}\" is on {}: load on the CPU, then "
                      "move the model",
                      mname, h.device().str()));
    swaps.emplace_back(h, folder.tensor(fname, h.dtype()));
  }
  for (auto& [h, s] : swaps) {  // PyTorch's param.data = s: the handle stays, its memory changes
    TensorImpl* d = h.impl();
    d->storage = s.impl()->storage;
    d->offset = s.impl()->offset;
    d->strides = s.impl()->strides;
  }
}

}  // namespace tg::nn::hf
