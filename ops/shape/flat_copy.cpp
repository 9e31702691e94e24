// ops/shape/flat_copy.cpp — element copies between flat buffers and tensors on either device
// (ops/optim/entries.hpp; DDP's buckets and ZeRO-1's shards in nn/ copy through it): a memcpy on
// the host, the kernel table's stream-ordered device copy on a GPU, strided tensors through
// row-major copies; and zero fills of such ranges. Not here: copies with broadcasting or a dtype
// change (Tensor::copy_).
#include "autograd/tape.hpp"
#include "ops/core/kernels.hpp"
#include "ops/optim/entries.hpp"

#include <fmt/format.h>

#include <cstring>

namespace tg::detail {

namespace {
char* base(const Tensor& t, int64_t off) {
  return static_cast<char*>(t.data_ptr()) + off * static_cast<int64_t>(dtype_size(t.dtype()));
}
}  // namespace

void copy_elems_(const char* op, const Tensor& dst, int64_t doff, const Tensor& src, int64_t soff,
                 int64_t n) {
  if (n == 0) return;
  if (dst.dtype() != src.dtype() || dst.device() != src.device() || doff < 0 || soff < 0 || n < 0 ||
      doff + n > dst.numel() || soff + n > src.numel())
    throw Error(fmt::format("{}: {} elements from {} {} {} at {} to {} {} {} at {}", op, n,
                            dtype_name(src.dtype()), shape_str(src.shape()), src.device().str(),
                            soff, dtype_name(dst.dtype()), shape_str(dst.shape()),
                            dst.device().str(), doff));
  // Offsets count elements in row-major order of the shape. A strided source is read through a
  // row-major copy; a strided destination (a transposed or narrowed parameter) is written in a
  // row-major copy of itself that then goes back through its strides.
  if (!src.is_contiguous()) return copy_elems_(op, dst, doff, dense_copy(src), soff, n);
  if (!dst.is_contiguous()) {
    const Tensor d = dense_copy(dst);
    copy_elems_(op, d, doff, src, soff, n);
    NoGradGuard ng;
    dst.detach().copy_(d);
    return;
  }
  const size_t bytes = static_cast<size_t>(n) * dtype_size(dst.dtype());
  if (dst.is_cuda()) {
    kernels(op, dst).copy_on_device(base(dst, doff), base(src, soff), bytes, dst.device().index);
  } else {
    std::memcpy(base(dst, doff), base(src, soff), bytes);
  }
}

void zero_elems_(const char* op, const Tensor& dst, int64_t off, int64_t n) {
  if (n == 0) return;
  if (dst.is_cuda() || !dst.is_contiguous()) {
    Tensor z = zeros({n}, dst.dtype(), dst.device());
    copy_elems_(op, dst, off, z, 0, n);
  } else {
    if (off < 0 || n < 0 || off + n > dst.numel())
      throw Error(fmt::format("{}: {} elements at {} of {}", op, n, off, shape_str(dst.shape())));
    std::memset(base(dst, off), 0, static_cast<size_t>(n) * dtype_size(dst.dtype()));
  }
}

}  // namespace tg::detail
