// nn/flat_copy.hpp — element copies between flat buffers and parameters on either device,
// shared by DDP's buckets and ZeRO-1's shards (nn/ddp.cpp, nn/zero.cpp), over ops' flat copies
// (ops/shape/flat_copy.cpp) with their errors named "dist copy" and "dist zeros". Internal to nn/.
#pragma once

#include "autograd/tensor.hpp"
#include "ops/optim/entries.hpp"

namespace tg::nn::detail {

// dst[doff .. doff+n) = src[soff .. soff+n), elements counted in row-major order of each shape
// (either may be a strided view: a transposed or narrowed parameter); same dtype and device
// (checked).
inline void copy_elems(const Tensor& dst, int64_t doff, const Tensor& src, int64_t soff,
                       int64_t n) {
  tg::detail::copy_elems_("dist copy", dst, doff, src, soff, n);
}
inline void fill_zeros(const Tensor& dst, int64_t off, int64_t n) {
  tg::detail::zero_elems_("dist zeros", dst, off, n);
}

}  // namespace tg::nn::detail
