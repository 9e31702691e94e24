// autograd/npy.cpp — .npy load/save through xtensor's xnpy, and the atomic file writer.
// The only translation unit of the library that includes xtensor.
#include "autograd/io.hpp"
#include "autograd/xtensor.hpp"

#include <fmt/format.h>
#include <xtensor/xnpy.hpp>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace tg {

void write_file_atomic(const std::string& path, const std::string& bytes) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0)
    throw Error(fmt::format("write_file_atomic: cannot create {}: {}", tmp, std::strerror(errno)));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw Error(fmt::format("write_file_atomic: writing {} failed: {}", tmp, std::strerror(e)));
    }
    done += static_cast<size_t>(w);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    ::unlink(tmp.c_str());
    throw Error(
        fmt::format("write_file_atomic: flushing {} failed: {}", tmp, std::strerror(errno)));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    throw Error(fmt::format("write_file_atomic: renaming {} to {} failed: {}", tmp, path,
                            std::strerror(e)));
  }
}

namespace {
// Reads the NPY header (format 1.0-3.0) and checks, before anything is allocated, that the shape
// it declares fits int64 and that the file holds that many bytes: xnpy multiplies the shape
// without overflow checks (a header of shape (2^61, 8) wraps to 0 bytes and loads "fine").
void check_npy_header(std::istream& in, const std::string& path) {
  in.seekg(0, std::ios::end);
  const int64_t file_size = static_cast<int64_t>(in.tellg());
  in.seekg(0);
  char magic[8] = {};
  in.read(magic, 8);
  if (!in || std::memcmp(magic, "\x93NUMPY", 6) != 0)
    throw Error(fmt::format("load_npy: {} is not a valid .npy file (no \\x93NUMPY magic)", path));
  const int major = static_cast<unsigned char>(magic[6]);
  int64_t header_len = 0;
  unsigned char len[4] = {};
  in.read(reinterpret_cast<char*>(len), major == 1 ? 2 : 4);
  if (!in) throw Error(fmt::format("load_npy: {}: truncated header", path));
  header_len = major == 1 ? (len[0] | (len[1] << 8))
                          : (int64_t(len[0]) | (int64_t(len[1]) << 8) | (int64_t(len[2]) << 16) |
                             (int64_t(len[3]) << 24));
  const int64_t data_start = 8 + (major == 1 ? 2 : 4) + header_len;
  if (header_len > 1000000 || data_start > file_size)
    throw Error(fmt::format("load_npy: {}: header of {} bytes in a file of {}", path, header_len,
                            file_size));
  std::string header(static_cast<size_t>(header_len), '\0');
  in.read(header.data(), header_len);
  const size_t sp = header.find("'shape'");
  const size_t open = header.find('(', sp), close = header.find(')', open);
  const size_t dp = header.find("'descr'");
  const size_t q1 = header.find('\'', header.find(':', dp)), q2 = header.find('\'', q1 + 1);
  if (sp == std::string::npos || open == std::string::npos || close == std::string::npos ||
      dp == std::string::npos || q1 == std::string::npos || q2 == std::string::npos)
    throw Error(fmt::format("load_npy: {}: malformed header {}", path, header));
  const std::string descr = header.substr(q1 + 1, q2 - q1 - 1);
  const int64_t width = descr.size() > 2 ? std::atoll(descr.c_str() + 2) : 0;
  int64_t count = 1;
  bool overflow = false, zero = false;
  std::string dims;
  std::stringstream ss(header.substr(open + 1, close - open - 1));
  for (std::string item; std::getline(ss, item, ',');) {
    if (item.find_first_not_of(" ") == std::string::npos) continue;
    char* end = nullptr;
    errno = 0;
    const long long d = std::strtoll(item.c_str(), &end, 10);
    if (errno != 0 || d < 0)
      throw Error(fmt::format("load_npy: {}: bad dimension '{}' in shape ({})", path, item,
                              header.substr(open + 1, close - open - 1)));
    zero |= d == 0;
    overflow |= __builtin_mul_overflow(count, static_cast<int64_t>(d), &count);
  }
  int64_t bytes = 0;
  overflow |= __builtin_mul_overflow(count, std::max<int64_t>(width, 1), &bytes);
  const std::string shape = "(" + header.substr(open + 1, close - open - 1) + ")";
  if (overflow && !zero)
    throw Error(fmt::format("load_npy: {}: shape {} of '{}' has more elements than int64 holds",
                            path, shape, descr));
  if (!zero && bytes > file_size - data_start)
    throw Error(
        fmt::format("load_npy: {}: shape {} of '{}' needs {} data bytes but the file holds "
                    "{}",
                    path, shape, descr, bytes, file_size - data_start));
  in.seekg(0);
}

// An .npy typestring: byte order ('<' little, '>' big, '|' n/a), kind (f, i, u, b), bytes per
// element; and the dtype it loads as.
struct NpyType {
  char kind = '?';
  int width = 0;
  bool big = false;  // big-endian elements of more than one byte
  DType dt = kFloat32;
};

NpyType npy_type(const std::string& ts, const std::string& path) {
  NpyType ty;
  const char order = ts.empty() ? '?' : ts[0];
  ty.kind = ts.size() > 1 ? ts[1] : '?';
  ty.width = ts.size() > 2 ? std::atoi(ts.c_str() + 2) : 0;
  ty.big = order == '>' && ty.width > 1;
  const char kind = ty.kind;
  const int width = ty.width;
  if (kind == 'f' && (width == 2 || width == 4 || width == 8))
    ty.dt = width == 2 ? kFloat16 : width == 4 ? kFloat32 : kFloat64;
  else if ((kind == 'i' || kind == 'u') && (width == 1 || width == 2 || width == 4 || width == 8))
    ty.dt = kInt64;  // token ids and other integers: widened to int64, tapegrad's index dtype
  else if (kind == 'b' && width == 1)
    ty.dt = kBool;
  else
    throw Error(fmt::format(
        "load_npy: {} has dtype '{}'; supported: float16/32/64 (f2, f4, f8), signed and unsigned "
        "integers of 1, 2, 4 or 8 bytes (loaded as int64) and bool (b1), either byte order",
        path, ts));
  return ty;
}

// The file's n elements at src into t (of ty.dt): integers widened to int64, big-endian bytes
// swapped.
void decode_npy(Tensor& t, const unsigned char* src, size_t n, const NpyType& ty,
                const std::string& path) {
  const int width = ty.width;
  // Element i's bytes in little-endian order, as an unsigned value of `width` bytes.
  auto raw = [&](size_t i) {
    uint64_t v = 0;
    for (int k = 0; k < width; ++k) {
      const uint64_t byte = src[i * width + (ty.big ? width - 1 - k : k)];
      v |= byte << (8 * k);
    }
    return v;
  };
  if (ty.dt == kInt64) {
    int64_t* out = t.data<int64_t>();
    for (size_t i = 0; i < n; ++i) {
      const uint64_t v = raw(i);
      if (ty.kind == 'u') {
        if (width == 8 && v > static_cast<uint64_t>(INT64_MAX))
          throw Error(fmt::format("load_npy: {}: element {} = {} does not fit int64", path, i, v));
        out[i] = static_cast<int64_t>(v);
      } else {  // sign-extend from width bytes
        const int shift = 64 - 8 * width;
        out[i] = static_cast<int64_t>(v << shift) >> shift;
      }
    }
  } else if (ty.big) {
    unsigned char* out = static_cast<unsigned char*>(t.data_ptr());
    for (size_t i = 0; i < n; ++i) {
      const uint64_t v = raw(i);
      std::memcpy(out + i * width, &v, width);  // little-endian host
    }
  } else {
    std::memcpy(t.data_ptr(), src, n * static_cast<size_t>(width));
  }
}
}  // namespace

Tensor load_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("load_npy: cannot open {}", path));
  check_npy_header(in, path);
  try {
    xt::detail::npy_file f = xt::detail::load_npy_file(in);
    if (!in)
      throw Error(
          fmt::format("load_npy: {} is truncated (expected {} data bytes)", path, f.n_bytes()));
    if (f.m_fortran_order)
      throw Error(fmt::format("load_npy: {} is in Fortran order; save it in C order", path));
    Shape shape(f.m_shape.begin(), f.m_shape.end());
    const std::string ts = f.m_typestring;
    const NpyType ty = npy_type(ts, path);
    Tensor t = Tensor::empty(shape, ty.dt);
    const size_t n = static_cast<size_t>(t.numel());
    if (f.n_bytes() != n * static_cast<size_t>(ty.width))
      throw Error(fmt::format("load_npy: {}: {} data bytes for shape {} of '{}'", path, f.n_bytes(),
                              shape_str(shape), ts));
    decode_npy(t, reinterpret_cast<const unsigned char*>(f.ptr()), n, ty, path);
    return t;
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error(fmt::format("load_npy: {} is not a valid .npy file: {}", path, e.what()));
  }
}

namespace {
// A float16 tensor as .npy 1.0 bytes ('<f2', C order): xtensor's writer knows no float16.
std::string npy_f16_bytes(const Tensor& t) {
  std::string shape;
  for (int64_t d : t.shape()) shape += std::to_string(d) + ", ";
  if (t.dim() > 1) shape.resize(shape.size() - 1);  // "(2, 3)"; "(5,)" keeps its comma
  std::string header = "{'descr': '<f2', 'fortran_order': False, 'shape': (" + shape + "), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += char(1);
  out += char(0);
  out += char(header.size() & 0xff);
  out += char(header.size() >> 8);
  out += header;
  out.append(static_cast<const char*>(t.data_ptr()), static_cast<size_t>(t.numel()) * 2);
  return out;
}
}  // namespace

void save_npy(const std::string& path, const Tensor& t_in) {
  if (!t_in.defined()) throw Error(fmt::format("save_npy: tensor for {} is undefined", path));
  const Tensor t = detail::dense(t_in);  // a view's elements in row-major order
  std::string bytes;
  switch (t.dtype()) {
    case kFloat32:
      bytes = xt::dump_npy(as_xarray<float>(t));
      break;
    case kFloat64:
      bytes = xt::dump_npy(as_xarray<double>(t));
      break;
    case kInt64:
      bytes = xt::dump_npy(as_xarray<int64_t>(t));
      break;
    case kBool:
      bytes = xt::dump_npy(as_xarray<bool>(t));
      break;
    case kFloat16:
      bytes = npy_f16_bytes(t);
      break;
    case kBFloat16:
      throw Error(fmt::format(
          "save_npy: {}: .npy has no bfloat16 type; save t.to(kFloat32) (exact) instead", path));
  }
  write_file_atomic(path, bytes);
}

}  // namespace tg
