// nn/hf/weights.cpp — memory-mapped safetensors folders and the strict load (see weights.hpp).
#include "nn/hf/weights.hpp"

#include "autograd/convert.hpp"
#include "autograd/tape.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>

namespace tg::nn::hf {

struct SafetensorsFolder::File {
  std::string path;
  std::shared_ptr<void> map;  // the mapping; munmap when the last tensor on it goes
  size_t size = 0;
  SafetensorsHeader header;
  // Tensors handed out mapped (their pages may hold a live parameter's in-place writes): never
  // dropped from the resident set.
  mutable std::mutex mu;
  mutable std::set<std::string> lent;
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

// Hands the whole pages of an allocator block nothing else uses (a placeholder about to be
// replaced) back to the system: the block then goes to the allocator's cache without being
// resident (its pages read as zeros when next touched).
void release_pages(const std::shared_ptr<Storage>& sp) {
  if (!sp || sp.use_count() != 1) return;
  const Storage& s = *sp;
  if (s.owner || s.device.type != DeviceType::CPU || s.nbytes <= Storage::kSmallBytes) return;
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto p = reinterpret_cast<uintptr_t>(s.data);
  const uintptr_t lo = (p + page - 1) / page * page, hi = (p + s.nbytes) / page * page;
  if (hi > lo) ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
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

void SafetensorsFolder::read_into(const std::string& name, Tensor& dst) const {
  const SafetensorsEntry& e = entry(name);
  const File& f = *files_[where_.at(name).first];
  const char* p = static_cast<const char*>(f.map.get()) + f.header.data_offset + e.begin;
  const size_t n = static_cast<size_t>(e.end - e.begin);
  const DType file_dtype = dtype_from_safetensors(e.dtype);
  if (is_reduced(file_dtype) && dst.dtype() == kFloat32 && dst.is_contiguous()) {
    convert::to_float(file_dtype, dst.data<float>(), p, dst.numel());  // widened in place
  } else if (e.dtype == safetensors_dtype(dst.dtype()) && dst.is_contiguous()) {  // no temporary
    if (n) std::memcpy(dst.data_ptr(), p, n);
  } else {
    NoGradGuard ng;
    dst.detach().copy_(tensor(name, dst.dtype()));
  }
  // The copied bytes' pages leave this process's resident set (a private mapping's unwritten
  // pages are the file's: read again from it if ever touched), so a copied tensor is not
  // counted twice. Only whole pages of this tensor's bytes, and never those of a tensor handed
  // out mapped (a parameter's in-place writes live in its private pages).
  {
    std::lock_guard<std::mutex> lock(f.mu);
    if (f.lent.count(name)) return;
  }
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t lo = (reinterpret_cast<uintptr_t>(p) + page - 1) / page * page,
                  hi = (reinterpret_cast<uintptr_t>(p) + n) / page * page;
  if (hi > lo) ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
}

Tensor SafetensorsFolder::tensor(const std::string& name, DType dtype) const {
  const SafetensorsEntry& e = entry(name);
  const File& f = *files_[where_.at(name).first];
  char* p = static_cast<char*>(f.map.get()) + f.header.data_offset + e.begin;
  const DType file_dtype = dtype_from_safetensors(e.dtype);
  Tensor t;
  if (reinterpret_cast<uintptr_t>(p) % dtype_size(file_dtype) == 0) {
    t = from_blob(p, e.shape, file_dtype, f.map);
    if (file_dtype == dtype) {
      std::lock_guard<std::mutex> lock(f.mu);
      f.lent.insert(name);
    }
  } else {  // a file of another writer may leave a tensor unaligned: copy it
    t = Tensor::empty(e.shape, file_dtype);
    if (e.end > e.begin) std::memcpy(t.data_ptr(), p, static_cast<size_t>(e.end - e.begin));
  }
  return file_dtype == dtype ? t : t.to(dtype);
}

// ---- loading into modules --------------------------------------------------------------

WeightLoader::WeightLoader(const SafetensorsFolder& folder, NameMap map)
    : folder_(folder), map_(std::move(map)) {
  const std::set<std::string> tied(map_.tied.begin(), map_.tied.end());
  for (const std::string& fname : folder_.names()) {
    const std::string mname = map_.to_module ? map_.to_module(fname) : fname;
    if (mname.empty() || tied.count(mname)) continue;
    if (source_.count(mname))
      errs_.push_back(fmt::format("{}: tensors \"{}\" and \"{}\" both name parameter \"{}\"",
                                  folder_.file_of(fname), source_[mname], fname, mname));
    else
      source_[mname] = fname;
  }
}

void WeightLoader::load(Module& m, const std::string& prefix, bool swap, bool copy,
                        std::optional<DType> as) {
  std::map<std::string, Tensor> live;  // state_dict's handles are detached: the real ones
  for (auto& [n, t] : m.named_parameters()) live[n] = t;
  for (auto& [n, t] : m.named_buffers()) live[n] = t;
  std::vector<std::pair<Tensor, std::string>> todo;  // (handle, file name)
  for (const auto& [name, t] : m.state_dict()) {
    const std::string mname = prefix + name;
    if (std::find(map_.tied.begin(), map_.tied.end(), mname) != map_.tied.end()) continue;
    auto it = source_.find(mname);
    wanted_.insert(mname);
    if (it == source_.end()) {
      errs_.push_back(fmt::format("{}: missing tensor \"{}\" {}", folder_.folder(), mname,
                                  shape_str(t.shape())));
      continue;
    }
    const SafetensorsEntry& e = folder_.entry(it->second);
    const std::string& file = folder_.file_of(it->second);
    if (e.shape != t.shape())
      errs_.push_back(fmt::format("{}: tensor \"{}\" is {} but the model's \"{}\" is {}", file,
                                  it->second, shape_str(e.shape), mname, shape_str(t.shape())));
    else if (e.dtype == "I64" || e.dtype == "BOOL")
      errs_.push_back(
          fmt::format("{}: tensor \"{}\" is {}, not a floating dtype", file, it->second, e.dtype));
    else if (live.at(name).device().type != DeviceType::CPU)
      errs_.push_back(fmt::format("parameter \"{}\" is on {}: load on the CPU, then move the model",
                                  mname, live.at(name).device().str()));
    else
      todo.emplace_back(live.at(name), it->second);
  }
  if (!swap || !errs_.empty()) return;
  // Into the parameter's own memory when the values must be converted anyway, or when asked
  // (copy); else the mapped tensor replaces its storage. Mapped tensors are made before any
  // storage is replaced.
  std::vector<std::pair<Tensor, Tensor>> swaps;
  for (auto& [h, fname] : todo) {
    if (as) {
      swaps.emplace_back(h, folder_.tensor(fname, *as));
      continue;
    }
    const bool own = h.is_contiguous() && h.impl()->storage->owner == nullptr;
    const bool convert = folder_.entry(fname).dtype != safetensors_dtype(h.dtype());
    if (own && (copy || convert))
      folder_.read_into(fname, h);
    else
      swaps.emplace_back(h, folder_.tensor(fname, h.dtype()));
  }
  for (auto& [h, s] : swaps) {
    TensorImpl* d = h.impl();
    if (d->dtype != s.dtype()) {
      release_pages(d->storage);
      d->dtype = s.dtype();
    }
    d->storage = s.impl()->storage;
    d->offset = s.impl()->offset;
    d->strides = s.impl()->strides;
  }
}

void WeightLoader::finish() const {
  std::vector<std::string> errs = errs_;
  for (const auto& [mname, fname] : source_)
    if (!wanted_.count(mname))
      errs.push_back(fmt::format("{}: unexpected tensor \"{}\" (the model has no such parameter)",
                                 folder_.file_of(fname), fname));
  if (errs.empty()) return;
  std::string msg = fmt::format(
      "from_pretrained: {}: {} problem(s), nothing loaded:", folder_.folder(), errs.size());
  for (const std::string& e : errs) msg += "\n  " + e;
  throw Error(msg);
}

void load_into(Module& model, const SafetensorsFolder& folder, const NameMap& map) {
  WeightLoader w(folder, map);
  w.load(model, "", false);
  w.finish();
  w.load(model, "", true, false);
}

}  // namespace tg::nn::hf
