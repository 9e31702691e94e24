// autograd/device_detail.hpp — internal (not installed): the tensor's device-memory operations
// that the rest of autograd needs on a CUDA device (autograd/device.cpp implements them, the one
// autograd file besides storage.cpp that calls cuda/). Every function names `op` in its errors.
#pragma once

#include "autograd/tensor.hpp"

#include <cstddef>

namespace tg::detail {
// Throws unless cuda:index is a visible device (the message says why CUDA is unavailable).
void check_cuda_index(int index, const char* op);
// out (contiguous, x's shape and dtype, x's CUDA device) = x, a strided view.
void cuda_dense_copy(const Tensor& out, const Tensor& x, const char* op);
// out (src's shape, another dtype, src's CUDA device) = src (contiguous) converted.
void cuda_cast(const Tensor& out, const Tensor& src, const char* op);
// `bytes` bytes from src on `from` to dst on `to`, at least one of them a CUDA device.
void cuda_copy_bytes(void* dst, Device to, const void* src, Device from, size_t bytes,
                     const char* op);
// Every element of t (contiguous, on a CUDA device) = v converted to t's dtype.
void cuda_fill(const Tensor& t, double v, const char* op);
// `bytes` zero bytes at p on CUDA device d.
void cuda_zero(void* p, size_t bytes, Device d, const char* op);
// dst += src, both contiguous, same shape, floating dtype and CUDA device (the engine's gradient
// accumulation).
void cuda_add_into(const Tensor& dst, const Tensor& src, const char* op);
}  // namespace tg::detail
