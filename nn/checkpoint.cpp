// nn/checkpoint.cpp — safetensors reading (with full validation) and writing, load_model, and
// training checkpoints (model file + training-state file sharing a run id). Layout and metadata
// keys are described in nn/checkpoint.hpp. JSON goes through nlohmann::json, in this file only.
#include "nn/checkpoint.hpp"

#include "autograd/io.hpp"
#include "autograd/tape.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

namespace tg::nn {

namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "safetensors data is little endian");

constexpr uint64_t kMaxHeader = 100'000'000;  // the Rust crate's MAX_HEADER_SIZE

const char* st_dtype(DType t) {
  switch (t) {
    case kFloat32:
      return "F32";
    case kFloat64:
      return "F64";
    case kInt64:
      return "I64";
    case kBool:
      return "BOOL";
  }
  return "?";
}

// ---- writing ----------------------------------------------------------------------------------

std::string u64_le(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[static_cast<size_t>(i)] = static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

void check_writable(const StateDict& tensors, const std::string& what) {
  for (const auto& [name, t] : tensors) {
    if (name.empty()) throw Error(fmt::format("save_safetensors: {}: empty tensor name", what));
    if (name == "__metadata__")
      throw Error(fmt::format(
          "save_safetensors: {}: \"__metadata__\" is reserved, not a tensor name", what));
    if (!t.defined())
      throw Error(fmt::format("save_safetensors: {}: tensor \"{}\" is undefined", what, name));
  }
}

}  // namespace

std::string safetensors_bytes(const StateDict& tensors, const Metadata& metadata,
                              const std::string& what) {
  check_writable(tensors, what);  // any string -> string map is valid metadata
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    uint64_t n = static_cast<uint64_t>(t.numel()) * dtype_size(t.dtype());
    nlohmann::ordered_json e = nlohmann::ordered_json::object();
    e["dtype"] = st_dtype(t.dtype());
    e["shape"] = t.shape();
    e["data_offsets"] = {offset, offset + n};
    header[name] = std::move(e);
    offset += n;
  }
  std::string json = header.dump();
  json.append((8 - json.size() % 8) % 8, ' ');
  std::string out = u64_le(json.size()) + json;
  out.reserve(out.size() + offset);
  for (const auto& [name, t] : tensors) {
    size_t n = static_cast<size_t>(t.numel()) * dtype_size(t.dtype());
    Tensor h = t.device().type == DeviceType::CPU ? t : t.detach().to(kCPU);  // GPU: host copy
    if (n) out.append(static_cast<const char*>(h.data_ptr()), n);
  }
  return out;
}

void save_safetensors(const std::string& path, const StateDict& tensors, const Metadata& metadata) {
  write_file_atomic(path, safetensors_bytes(tensors, metadata, path));
}

// ---- reading ----------------------------------------------------------------------------------

namespace {

struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin = 0, end = 0;
};

struct Reader {
  const std::string& what;
  [[noreturn]] void fail(const std::string& msg) const {
    throw Error(fmt::format("load_safetensors: {}: {}", what, msg));
  }
  [[noreturn]] void fail(const std::string& tensor, const std::string& msg) const {
    throw Error(fmt::format("load_safetensors: {}: tensor \"{}\": {}", what, tensor, msg));
  }

  // JSON with a check for duplicate keys at every level (the parser would keep the last one).
  nlohmann::json parse_header(const std::string& text) const {
    std::vector<std::set<std::string>> seen;
    std::string top_key, dup, dup_owner;
    auto cb = [&](int depth, nlohmann::json::parse_event_t ev, nlohmann::json& parsed) {
      using E = nlohmann::json::parse_event_t;
      if (ev == E::object_start) seen.emplace_back();
      if (ev == E::object_end && !seen.empty()) seen.pop_back();
      if (ev == E::key && !seen.empty()) {
        const std::string& k = parsed.get_ref<const std::string&>();
        if (depth == 1) top_key = k;
        if (!seen.back().insert(k).second && dup.empty()) {
          dup = k;
          dup_owner = depth == 1 ? "" : top_key;
        }
      }
      return true;
    };
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(text, cb);
    } catch (const nlohmann::json::exception& e) {
      fail(fmt::format("header is not valid JSON: {}", e.what()));
    }
    if (!dup.empty()) {
      if (dup_owner.empty()) fail(dup, "appears twice in the header (duplicate JSON key)");
      if (dup_owner == "__metadata__")
        fail(fmt::format("__metadata__ has the key \"{}\" twice (duplicate JSON key)", dup));
      fail(dup_owner,
           fmt::format("key \"{}\" appears twice in its entry (duplicate JSON key)", dup));
    }
    if (!j.is_object()) fail(fmt::format("header is a JSON {}, not an object", j.type_name()));
    return j;
  }

  Metadata read_metadata(const nlohmann::json& m) const {
    if (!m.is_object())
      fail(fmt::format("__metadata__ must be an object mapping strings to strings, got a {}",
                       m.type_name()));
    Metadata out;
    for (const auto& [k, v] : m.items()) {
      if (!v.is_string())
        fail(fmt::format("__metadata__ must map strings to strings; \"{}\" is a {}", k,
                         v.type_name()));
      out[k] = v.get<std::string>();
    }
    return out;
  }

  // A non-negative integer that fits in u64.
  uint64_t read_uint(const std::string& name, const nlohmann::json& v, const char* field) const {
    if (v.is_number_unsigned()) return v.get<uint64_t>();
    if (v.is_number_integer())
      fail(name, fmt::format("{} holds a negative number {}", field, v.dump()));
    fail(name, fmt::format("{} holds {}, not a non-negative integer", field, v.dump()));
  }

  DType read_dtype(const std::string& name, const nlohmann::json& v) const {
    if (!v.is_string()) fail(name, fmt::format("dtype must be a string, got {}", v.dump()));
    const std::string s = v.get<std::string>();
    if (s == "F32") return kFloat32;
    if (s == "F64") return kFloat64;
    if (s == "I64") return kInt64;
    if (s == "BOOL") return kBool;
    static const std::set<std::string> known{"F16", "BF16", "I8",  "U8",      "I16",    "U16",
                                             "I32", "U32",  "U64", "F8_E5M2", "F8_E4M3"};
    if (known.count(s))
      fail(name, fmt::format("dtype {} is not supported (tapegrad reads F32, F64, I64, BOOL)", s));
    fail(name, fmt::format("unknown dtype \"{}\" (tapegrad reads F32, F64, I64, BOOL)", s));
  }

  Entry read_entry(const std::string& name, const nlohmann::json& e, uint64_t data_size) const {
    if (!e.is_object()) fail(name, fmt::format("entry must be an object, got a {}", e.type_name()));
    for (const char* k : {"dtype", "shape", "data_offsets"})
      if (!e.contains(k)) fail(name, fmt::format("entry has no \"{}\"", k));
    Entry out;
    out.name = name;
    out.dtype = read_dtype(name, e["dtype"]);
    const nlohmann::json& sh = e["shape"];
    if (!sh.is_array()) fail(name, fmt::format("shape must be an array, got {}", sh.dump()));
    uint64_t numel = 1;
    bool overflow = false;
    for (const auto& d : sh) {
      uint64_t v = read_uint(name, d, "shape");
      if (v > static_cast<uint64_t>(INT64_MAX)) overflow = true;
      out.shape.push_back(static_cast<int64_t>(std::min<uint64_t>(v, INT64_MAX)));
      overflow = overflow || __builtin_mul_overflow(numel, v, &numel);
    }
    const nlohmann::json& off = e["data_offsets"];
    if (!off.is_array() || off.size() != 2)
      fail(name, fmt::format("data_offsets must be [begin, end], got {}", off.dump()));
    out.begin = read_uint(name, off[0], "data_offsets");
    out.end = read_uint(name, off[1], "data_offsets");
    if (out.begin > out.end)
      fail(name, fmt::format("data_offsets [{}, {}] has begin > end", out.begin, out.end));
    if (out.end > data_size)
      fail(name, fmt::format("data_offsets [{}, {}] go past the end of the data section ({} bytes)",
                             out.begin, out.end, data_size));
    uint64_t nbytes = 0;
    if (overflow || __builtin_mul_overflow(numel, dtype_size(out.dtype), &nbytes))
      fail(name, fmt::format("shape {} is too large", sh.dump()));
    if (nbytes != out.end - out.begin)
      fail(name, fmt::format("shape {} of {} needs {} bytes but data_offsets [{}, {}] hold {}",
                             shape_str(out.shape), st_dtype(out.dtype), nbytes, out.begin, out.end,
                             out.end - out.begin));
    return out;
  }

  // Like the Rust crate: sorted by offsets, the tensors tile the data section exactly.
  void check_coverage(std::vector<Entry>& es, uint64_t data_size) const {
    std::stable_sort(es.begin(), es.end(), [](const Entry& a, const Entry& b) {
      return std::make_pair(a.begin, a.end) < std::make_pair(b.begin, b.end);
    });
    uint64_t pos = 0;
    for (size_t i = 0; i < es.size(); ++i) {
      const Entry& e = es[i];
      if (e.begin < pos)
        fail(e.name, fmt::format("data [{}, {}) overlaps tensor \"{}\" [{}, {})", e.begin, e.end,
                                 es[i - 1].name, es[i - 1].begin, es[i - 1].end));
      if (e.begin > pos)
        fail(e.name, fmt::format("data starts at byte {} but the bytes before end at {}: {} unused "
                                 "bytes (a gap; safetensors requires contiguous data)",
                                 e.begin, pos, e.begin - pos));
      pos = e.end;
    }
    if (pos != data_size)
      fail(fmt::format("the tensors cover {} of the {} data bytes: {} unused bytes at the end", pos,
                       data_size, data_size - pos));
  }

  Tensor read_tensor(const Entry& e, const char* data) const {
    Tensor t = Tensor::empty(e.shape, e.dtype);
    size_t n = static_cast<size_t>(e.end - e.begin);
    if (n) std::memcpy(t.data_ptr(), data + e.begin, n);
    if (e.dtype == kBool) {
      const unsigned char* p = static_cast<const unsigned char*>(t.data_ptr());
      for (size_t i = 0; i < n; ++i)
        if (p[i] > 1)
          fail(e.name, fmt::format("BOOL element {} has byte value {} (must be 0 or 1)", i, p[i]));
    }
    return t;
  }
};

}  // namespace

SafetensorsFile parse_safetensors(const std::string& bytes, const std::string& what) {
  Reader r{what};
  if (bytes.size() < 8)
    r.fail(fmt::format("file is {} bytes, too short for the 8-byte header length", bytes.size()));
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i)
    n = (n << 8) | static_cast<unsigned char>(bytes[static_cast<size_t>(i)]);
  if (n > kMaxHeader)
    r.fail(fmt::format("header length {} is larger than the {}-byte limit", n, kMaxHeader));
  if (n > bytes.size() - 8)
    r.fail(fmt::format("header length {} goes beyond the end of the file ({} bytes)", n,
                       bytes.size()));
  nlohmann::json header = r.parse_header(bytes.substr(8, n));
  uint64_t data_size = bytes.size() - 8 - n;
  SafetensorsFile out;
  std::vector<Entry> entries;
  for (const auto& [name, e] : header.items()) {
    if (name == "__metadata__")
      out.metadata = r.read_metadata(e);
    else
      entries.push_back(r.read_entry(name, e, data_size));
  }
  r.check_coverage(entries, data_size);
  const char* data = bytes.data() + 8 + n;
  for (const Entry& e : entries) out.tensors.insert(e.name, r.read_tensor(e, data));
  return out;
}

namespace {
std::string read_file(const std::string& path, const char* fn) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw Error(fmt::format("{}: cannot open {}: {}", fn, path, std::strerror(errno)));
  if (!S_ISREG(st.st_mode)) throw Error(fmt::format("{}: {} is not a regular file", fn, path));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("{}: cannot open {}", fn, path));
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (in.gcount() != static_cast<std::streamsize>(bytes.size()))
    throw Error(fmt::format("{}: reading {} failed", fn, path));
  return bytes;
}
}  // namespace

SafetensorsFile load_safetensors(const std::string& path) {
  return parse_safetensors(read_file(path, "load_safetensors"), path);
}

// ---- load_model -------------------------------------------------------------------------------

namespace {
// The model's own state, with float tensors of the file converted to the model's dtype.
StateDict converted(const StateDict& file, const StateDict& own) {
  StateDict out;
  for (const auto& [k, t] : file) {
    bool conv = own.contains(k) && own.at(k).dtype() != t.dtype() && is_floating(t.dtype()) &&
                is_floating(own.at(k).dtype());
    out.insert(k, conv ? t.to(own.at(k).dtype()) : t);
  }
  return out;
}
}  // namespace

LoadResult load_model(const std::string& path, Module& model, bool strict, bool convert_dtypes) {
  SafetensorsFile f = load_safetensors(path);
  NoGradGuard ng;
  StateDict dict = convert_dtypes ? converted(f.tensors, model.state_dict()) : f.tensors;
  try {
    return model.load_state_dict(dict, strict);
  } catch (const Error& e) {
    throw Error(fmt::format("load_model: {}: {}", path, e.what()));
  }
}

// ---- training checkpoints ---------------------------------------------------------------------

namespace {

constexpr const char* kModelFormat = "model/1";
constexpr const char* kStateFormat = "training_state/1";

std::string num(double v) { return fmt::format("{}", v); }  // shortest round-trip decimals

template <typename T>
std::string join(const std::vector<T>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + num(static_cast<double>(v[i]));
  return s;
}

std::string new_run_id() {
  std::random_device rd;  // not the global generator: saving must not move its state
  uint64_t v = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  return fmt::format("{:016x}", v);
}

// Metadata lookups and number parsing for one checkpoint file.
struct MetaReader {
  const Metadata& m;
  const std::string& file;
  [[noreturn]] void fail(const std::string& msg) const {
    throw Error(fmt::format("load_checkpoint: {}: {}", file, msg));
  }
  const std::string& get(const std::string& key) const {
    auto it = m.find(key);
    if (it == m.end()) fail(fmt::format("metadata has no \"{}\"", key));
    return it->second;
  }
  double number(const std::string& key, const std::string& s) const {
    errno = 0;
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size() || errno == ERANGE)
      fail(fmt::format("metadata \"{}\" holds \"{}\", not a number", key, s));
    return v;
  }
  double number(const std::string& key) const { return number(key, get(key)); }
  int64_t integer(const std::string& key, const std::string& s) const {
    double v = number(key, s);
    if (v != static_cast<double>(static_cast<int64_t>(v)))
      fail(fmt::format("metadata \"{}\" holds \"{}\", not an integer", key, s));
    return static_cast<int64_t>(v);
  }
  int64_t integer(const std::string& key) const { return integer(key, get(key)); }
  std::vector<double> numbers(const std::string& key) const {
    std::vector<double> out;
    std::string s = get(key), item;
    if (s.empty()) return out;
    std::istringstream is(s);
    while (std::getline(is, item, ',')) out.push_back(number(key, item));
    return out;
  }
  std::vector<int64_t> integers(const std::string& key) const {
    std::vector<int64_t> out;
    std::istringstream is(get(key));
    std::string item;
    while (std::getline(is, item, ',')) out.push_back(integer(key, item));
    return out;
  }
};

Metadata training_metadata(const LRScheduler* sched, const std::string& id, int64_t step,
                           const Metadata& extra, const OptimizerState& os) {
  Metadata m{{"tapegrad.format", kStateFormat},
             {"tapegrad.run_id", id},
             {"tapegrad.step", std::to_string(step)},
             {"optimizer", os.optimizer},
             {"optimizer.num_groups", std::to_string(os.param_groups.size())}};
  for (size_t g = 0; g < os.param_groups.size(); ++g) {
    std::string p = fmt::format("optimizer.group.{}.", g);
    m[p + "params"] = join(os.param_groups[g].params);
    for (const auto& [k, v] : os.param_groups[g].options) m[p + "option." + k] = num(v);
  }
  std::vector<int64_t> with_state;
  for (const auto& [i, ps] : os.state) {
    with_state.push_back(i);
    for (const auto& [k, v] : ps.numbers)
      m[fmt::format("optimizer.state.{}.number.{}", i, k)] = num(v);
  }
  m["optimizer.state_params"] = join(with_state);
  m["scheduler"] = sched ? "present" : "none";
  if (sched) {
    SchedulerState s = sched->state_dict();
    m["scheduler.last_epoch"] = std::to_string(s.last_epoch);
    m["scheduler.base_lrs"] = join(s.base_lrs);
    m["scheduler.last_lrs"] = join(s.last_lrs);
  }
  m["rng.default"] = default_generator().get_state();
  for (const auto& [k, v] : extra) m["extra." + k] = v;
  return m;
}

}  // namespace

std::string checkpoint_model_path(const std::string& dir) { return dir + "/model.safetensors"; }
std::string checkpoint_state_path(const std::string& dir) {
  return dir + "/training_state.safetensors";
}

void save_checkpoint(const std::string& dir, const Module& model, const Optimizer& optimizer,
                     const LRScheduler* scheduler, int64_t step, const Metadata& extra) {
  for (const auto& [k, v] : extra)
    if (k.rfind("tapegrad.", 0) == 0)
      throw Error(
          fmt::format("save_checkpoint: {}: extra key \"{}\" uses the reserved prefix "
                      "\"tapegrad.\"",
                      dir, k));
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error(fmt::format("save_checkpoint: cannot create {}: {}", dir, ec.message()));
  const std::string id = new_run_id();
  OptimizerState os = optimizer.state_dict();
  StateDict state;
  for (const auto& [i, ps] : os.state)
    for (const auto& [k, t] : ps.tensors) state.insert(fmt::format("state.{}.{}", i, k), t);
  Metadata mm = extra;
  mm["tapegrad.format"] = kModelFormat;
  mm["tapegrad.run_id"] = id;
  mm["tapegrad.step"] = std::to_string(step);
  // Build both files' bytes first: a bad argument then fails before anything is written.
  std::string model_bytes = safetensors_bytes(model.state_dict(), mm, checkpoint_model_path(dir));
  std::string state_bytes = safetensors_bytes(
      state, training_metadata(scheduler, id, step, extra, os), checkpoint_state_path(dir));
  write_file_atomic(checkpoint_model_path(dir), model_bytes);
  write_file_atomic(checkpoint_state_path(dir), state_bytes);
}

namespace {

OptimizerState read_optimizer_state(const MetaReader& r, const StateDict& tensors) {
  OptimizerState os;
  os.optimizer = r.get("optimizer");
  int64_t ng = r.integer("optimizer.num_groups");
  if (ng < 0 || ng > 1'000'000) r.fail(fmt::format("optimizer.num_groups is {}", ng));
  for (int64_t g = 0; g < ng; ++g) {
    std::string p = fmt::format("optimizer.group.{}.", g);
    OptimizerState::Group grp;
    grp.params = r.integers(p + "params");
    const std::string opt_prefix = p + "option.";
    for (auto it = r.m.lower_bound(opt_prefix);
         it != r.m.end() && it->first.rfind(opt_prefix, 0) == 0; ++it)
      grp.options[it->first.substr(opt_prefix.size())] = r.number(it->first);
    os.param_groups.push_back(std::move(grp));
  }
  for (int64_t i : r.integers("optimizer.state_params")) {
    ParamState& ps = os.state[i];
    const std::string np = fmt::format("optimizer.state.{}.number.", i);
    for (auto it = r.m.lower_bound(np); it != r.m.end() && it->first.rfind(np, 0) == 0; ++it)
      ps.numbers[it->first.substr(np.size())] = r.number(it->first);
  }
  for (const auto& [name, t] : tensors) {
    // "state.<index>.<name>"
    size_t dot = name.find('.', 6);
    int64_t index = -1;
    if (name.rfind("state.", 0) == 0 && dot != std::string::npos && dot + 1 < name.size()) {
      std::string idx = name.substr(6, dot - 6);
      if (!idx.empty() && idx.find_first_not_of("0123456789") == std::string::npos &&
          idx.size() < 18)
        index = std::stoll(idx);
    }
    if (index < 0) r.fail(fmt::format("tensor \"{}\" is not named state.<index>.<name>", name));
    if (!os.state.count(index))
      r.fail(
          fmt::format("tensor \"{}\" belongs to parameter {}, which is not in "
                      "optimizer.state_params",
                      name, index));
    os.state[index].tensors[name.substr(dot + 1)] = t;
  }
  return os;
}

}  // namespace

CheckpointInfo load_checkpoint(const std::string& dir, Module& model, Optimizer& optimizer,
                               LRScheduler* scheduler, bool restore_rng) {
  const std::string mpath = checkpoint_model_path(dir), spath = checkpoint_state_path(dir);
  SafetensorsFile mf = load_safetensors(mpath);
  SafetensorsFile sf = load_safetensors(spath);
  MetaReader mr{mf.metadata, mpath}, sr{sf.metadata, spath};
  if (mr.get("tapegrad.format") != kModelFormat)
    mr.fail(fmt::format("tapegrad.format is \"{}\", expected \"{}\"", mr.get("tapegrad.format"),
                        kModelFormat));
  if (sr.get("tapegrad.format") != kStateFormat)
    sr.fail(fmt::format("tapegrad.format is \"{}\", expected \"{}\"", sr.get("tapegrad.format"),
                        kStateFormat));
  CheckpointInfo info;
  info.run_id = sr.get("tapegrad.run_id");
  info.step = sr.integer("tapegrad.step");
  if (mr.get("tapegrad.run_id") != info.run_id || mr.integer("tapegrad.step") != info.step)
    throw Error(fmt::format(
        "load_checkpoint: {}: model.safetensors (run {}, step {}) and training_state.safetensors "
        "(run {}, step {}) do not belong together (was a save interrupted?)",
        dir, mr.get("tapegrad.run_id"), mr.get("tapegrad.step"), info.run_id, info.step));
  for (const auto& [k, v] : sf.metadata)
    if (k.rfind("extra.", 0) == 0) info.extra[k.substr(6)] = v;

  // Everything is parsed and checked before anything changes.
  OptimizerState os = read_optimizer_state(sr, sf.tensors);
  bool has_sched = sr.get("scheduler") == "present";
  if (has_sched != (scheduler != nullptr))
    sr.fail(has_sched ? "the checkpoint has scheduler state but no scheduler was given"
                      : "a scheduler was given but the checkpoint has no scheduler state");
  SchedulerState ss;
  if (has_sched) {
    ss.last_epoch = sr.integer("scheduler.last_epoch");
    ss.base_lrs = sr.numbers("scheduler.base_lrs");
    ss.last_lrs = sr.numbers("scheduler.last_lrs");
  }
  const std::string& rng = sr.get("rng.default");
  if (restore_rng) {
    Generator probe;
    try {
      probe.set_state(rng);
    } catch (const Error& e) {
      sr.fail(fmt::format("rng.default: {}", e.what()));
    }
  }

  NoGradGuard ng;
  OptimizerState old_opt = optimizer.state_dict();
  SchedulerState old_sched = scheduler ? scheduler->state_dict() : SchedulerState{};
  try {
    optimizer.load_state_dict(os);
  } catch (const Error& e) {
    sr.fail(e.what());
  }
  try {
    if (scheduler) {
      scheduler->load_state_dict(ss);
      if (scheduler->get_last_lr() != ss.last_lrs)
        sr.fail(
            fmt::format("the scheduler gives lrs [{}] at step {}, the checkpoint has [{}]: it "
                        "is not the scheduler that was saved",
                        join(scheduler->get_last_lr()), ss.last_epoch, join(ss.last_lrs)));
    }
    try {
      model.load_state_dict(mf.tensors, true);
    } catch (const Error& e) {
      mr.fail(e.what());
    }
  } catch (...) {
    optimizer.load_state_dict(old_opt);
    if (scheduler) scheduler->load_state_dict(old_sched);
    throw;
  }
  if (restore_rng) default_generator().set_state(rng);
  return info;
}

}  // namespace tg::nn
