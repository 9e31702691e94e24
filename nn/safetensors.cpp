// nn/safetensors.cpp — safetensors reading (with full validation) and writing, and load_model.
// The layout is described in nn/checkpoint.hpp. JSON goes through nlohmann::json (here and in
// nn/checkpoint.cpp only).
#include "nn/checkpoint.hpp"

#include "autograd/io.hpp"
#include "autograd/tape.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <tuple>

namespace tg::nn {

const char* safetensors_dtype(DType t) {
  switch (t) {
    case kFloat32:
      return "F32";
    case kFloat64:
      return "F64";
    case kInt64:
      return "I64";
    case kBool:
      return "BOOL";
    case kBFloat16:
      return "BF16";
    case kFloat16:
      return "F16";
  }
  return "?";
}
DType dtype_from_safetensors(const std::string& code) {
  for (DType t : {kFloat32, kFloat64, kBFloat16, kFloat16, kInt64, kBool})
    if (code == safetensors_dtype(t)) return t;
  throw Error(fmt::format("safetensors: dtype {} has no tapegrad dtype", code));
}

namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "safetensors data is little endian");

constexpr uint64_t kMaxHeader = 100'000'000;  // the Rust crate's MAX_HEADER_SIZE

// ---- writing ----------------------------------------------------------------------------------

std::string u64_le(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[static_cast<size_t>(i)] = static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

// CRC-32 (IEEE 802.3, zlib's crc32: reflected polynomial 0xEDB88320), one table lookup per byte.
uint32_t crc32_of(const char* p, size_t n) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1u) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i)
    c = table[(c ^ static_cast<unsigned char>(p[i])) & 0xFFu] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

std::string crc_key(const std::string& tensor) { return kChecksumPrefix + tensor; }
std::string crc_hex(uint32_t c) { return fmt::format("{:08x}", c); }

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
  // Each tensor's bytes: a host copy of a GPU tensor, a view's elements in row-major order.
  std::vector<Tensor> host;
  Metadata meta;  // the caller's entries, less stale checksums, then one checksum per tensor
  for (const auto& [k, v] : metadata)
    if (k.rfind(kChecksumPrefix, 0) != 0) meta[k] = v;
  for (const auto& [name, t] : tensors) {
    host.push_back(tg::detail::dense(t.device().type == DeviceType::CPU ? t : t.detach().to(kCPU)));
    const size_t n = static_cast<size_t>(t.numel()) * dtype_size(t.dtype());
    meta[crc_key(name)] =
        crc_hex(crc32_of(n ? static_cast<const char*>(host.back().data_ptr()) : "", n));
  }
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!meta.empty()) header["__metadata__"] = meta;
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    uint64_t n = static_cast<uint64_t>(t.numel()) * dtype_size(t.dtype());
    nlohmann::ordered_json e = nlohmann::ordered_json::object();
    e["dtype"] = safetensors_dtype(t.dtype());
    e["shape"] = t.shape();
    e["data_offsets"] = {offset, offset + n};
    header[name] = std::move(e);
    offset += n;
  }
  std::string json = header.dump();
  json.append((8 - json.size() % 8) % 8, ' ');
  std::string out = u64_le(json.size()) + json;
  out.reserve(out.size() + offset);
  for (const Tensor& h : host) {
    const size_t n = static_cast<size_t>(h.numel()) * dtype_size(h.dtype());
    if (n) out.append(static_cast<const char*>(h.data_ptr()), n);
  }
  return out;
}

void save_safetensors(const std::string& path, const StateDict& tensors, const Metadata& metadata) {
  write_file_atomic(path, safetensors_bytes(tensors, metadata, path));
}

// ---- reading ----------------------------------------------------------------------------------

namespace {

// A header entry; `st` is the file's dtype name.
struct Entry {
  std::string name;
  std::string st;
  size_t itemsize = 0;
  Shape shape;
  uint64_t begin = 0, end = 0;
};

constexpr const char* kReads = "F32, F64, BF16, F16, I64, BOOL";

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

  // The dtype's name and element size.
  std::pair<std::string, size_t> read_dtype(const std::string& name,
                                            const nlohmann::json& v) const {
    if (!v.is_string()) fail(name, fmt::format("dtype must be a string, got {}", v.dump()));
    const std::string s = v.get<std::string>();
    if (s == "F32") return {s, 4};
    if (s == "F64" || s == "I64") return {s, 8};
    if (s == "BOOL") return {s, 1};
    if (s == "F16" || s == "BF16") return {s, 2};
    static const std::set<std::string> known{"I8",  "U8",  "I16",     "U16",    "U64",
                                             "I32", "U32", "F8_E5M2", "F8_E4M3"};
    if (known.count(s))
      fail(name, fmt::format("dtype {} is not supported (tapegrad reads {})", s, kReads));
    fail(name, fmt::format("unknown dtype \"{}\" (tapegrad reads {})", s, kReads));
  }

  Entry read_entry(const std::string& name, const nlohmann::json& e, uint64_t data_size) const {
    if (!e.is_object()) fail(name, fmt::format("entry must be an object, got a {}", e.type_name()));
    for (const char* k : {"dtype", "shape", "data_offsets"})
      if (!e.contains(k)) fail(name, fmt::format("entry has no \"{}\"", k));
    Entry out;
    out.name = name;
    std::tie(out.st, out.itemsize) = read_dtype(name, e["dtype"]);
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
    if (overflow || __builtin_mul_overflow(numel, out.itemsize, &nbytes))
      fail(name, fmt::format("shape {} is too large", sh.dump()));
    if (nbytes != out.end - out.begin)
      fail(name, fmt::format("shape {} of {} needs {} bytes but data_offsets [{}, {}] hold {}",
                             shape_str(out.shape), out.st, nbytes, out.begin, out.end,
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

  // A file of ours carries the CRC-32 of each tensor's bytes (kChecksumPrefix + name); a file
  // from another writer has none and is read as it is.
  void check_crc(const Entry& e, const char* data, const Metadata& meta) const {
    auto it = meta.find(crc_key(e.name));
    if (it == meta.end()) return;
    const std::string got = crc_hex(crc32_of(data + e.begin, static_cast<size_t>(e.end - e.begin)));
    if (it->second != got)
      fail(e.name, fmt::format("checksum mismatch: the header's {} is {} but the {} data bytes "
                               "[{}, {}) give {}; the file is corrupt (a flipped bit or a "
                               "partial copy)",
                               it->first, it->second, e.end - e.begin, e.begin, e.end, got));
  }

  void check_bool(const Entry& e, const char* data) const {
    if (e.st != "BOOL") return;
    const unsigned char* p = reinterpret_cast<const unsigned char*>(data + e.begin);
    for (uint64_t i = 0; i < e.end - e.begin; ++i)
      if (p[i] > 1)
        fail(e.name, fmt::format("BOOL element {} has byte value {} (must be 0 or 1)", i, p[i]));
  }

  Tensor read_tensor(const Entry& e, const char* data) const {
    const DType dt = dtype_from_safetensors(e.st);
    Tensor t = Tensor::empty(e.shape, dt);
    size_t n = static_cast<size_t>(e.end - e.begin);
    if (n) std::memcpy(t.data_ptr(), data + e.begin, n);
    return t;
  }
};

}  // namespace

namespace {
// Everything but the tensors' bytes: header, entries, coverage, checksums, BOOL bytes.
struct Parsed {
  std::vector<Entry> entries;  // in data-offset order
  Metadata metadata;           // checksum keys removed
  uint64_t data_offset = 0;
};

Parsed parse_all(const Reader& r, const char* bytes, size_t size) {
  if (size < 8)
    r.fail(fmt::format("file is {} bytes, too short for the 8-byte header length", size));
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[i]);
  if (n > kMaxHeader)
    r.fail(fmt::format("header length {} is larger than the {}-byte limit", n, kMaxHeader));
  if (n > size - 8)
    r.fail(fmt::format("header length {} goes beyond the end of the file ({} bytes)", n, size));
  nlohmann::json header = r.parse_header(std::string(bytes + 8, static_cast<size_t>(n)));
  const uint64_t data_size = size - 8 - n;
  Parsed out;
  out.data_offset = 8 + n;
  for (const auto& [name, e] : header.items()) {
    if (name == "__metadata__")
      out.metadata = r.read_metadata(e);
    else
      out.entries.push_back(r.read_entry(name, e, data_size));
  }
  r.check_coverage(out.entries, data_size);
  const char* data = bytes + out.data_offset;
  for (const Entry& e : out.entries) {
    r.check_crc(e, data, out.metadata);
    r.check_bool(e, data);
  }
  // The checksums are the file's, not the caller's metadata: a load -> save round trip writes
  // fresh ones.
  for (auto it = out.metadata.begin(); it != out.metadata.end();)
    it = it->first.rfind(kChecksumPrefix, 0) == 0 ? out.metadata.erase(it) : std::next(it);
  return out;
}
}  // namespace

SafetensorsFile parse_safetensors(const std::string& bytes, const std::string& what) {
  Reader r{what};
  Parsed p = parse_all(r, bytes.data(), bytes.size());
  SafetensorsFile out;
  out.metadata = std::move(p.metadata);
  for (const Entry& e : p.entries)
    out.tensors.insert(e.name, r.read_tensor(e, bytes.data() + p.data_offset));
  return out;
}

SafetensorsHeader parse_safetensors_header(const char* bytes, size_t size,
                                           const std::string& what) {
  Reader r{what};
  Parsed p = parse_all(r, bytes, size);
  SafetensorsHeader out;
  out.metadata = std::move(p.metadata);
  out.data_offset = p.data_offset;
  for (Entry& e : p.entries)
    out.entries.push_back({std::move(e.name), std::move(e.st), std::move(e.shape), e.begin, e.end});
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

}  // namespace tg::nn
