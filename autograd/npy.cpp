// autograd/npy.cpp — .npy load/save through xtensor's xnpy, and the atomic file writer.
// The only translation unit of the library that includes xtensor.
#include "autograd/io.hpp"
#include "autograd/xtensor.hpp"

#include <fmt/format.h>
#include <xtensor/xnpy.hpp>

#include <cstdio>
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

Tensor load_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("load_npy: cannot open {}", path));
  try {
    xt::detail::npy_file f = xt::detail::load_npy_file(in);
    if (!in)
      throw Error(
          fmt::format("load_npy: {} is truncated (expected {} data bytes)", path, f.n_bytes()));
    if (f.m_fortran_order)
      throw Error(fmt::format("load_npy: {} is in Fortran order; save it in C order", path));
    Shape shape(f.m_shape.begin(), f.m_shape.end());
    std::string ts = f.m_typestring;
    DType dt;
    if (ts == "<f4")
      dt = kFloat32;
    else if (ts == "<f8")
      dt = kFloat64;
    else if (ts == "<i8")
      dt = kInt64;
    else if (ts == "|b1")
      dt = kBool;
    else
      throw Error(
          fmt::format("load_npy: {} has dtype '{}'; supported: <f4, <f8, <i8, |b1", path, ts));
    Tensor t = Tensor::empty(shape, dt);
    if (f.n_bytes() != static_cast<size_t>(t.numel()) * dtype_size(dt))
      throw Error(fmt::format("load_npy: {}: {} data bytes for shape {}", path, f.n_bytes(),
                              shape_str(shape)));
    std::memcpy(t.data_ptr(), f.ptr(), f.n_bytes());
    return t;
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error(fmt::format("load_npy: {} is not a valid .npy file: {}", path, e.what()));
  }
}

void save_npy(const std::string& path, const Tensor& t) {
  if (!t.defined()) throw Error(fmt::format("save_npy: tensor for {} is undefined", path));
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
  }
  write_file_atomic(path, bytes);
}

}  // namespace tg
