// autograd/grad_sum.cpp — how the engine sums two gradients for one tensor: in place for a plain
// backward, and under create_graph as a recorded node of autograd's own ("add", whose backward
// passes the gradient to both terms), so the sum keeps both histories without calling ops/.
// Same shape and floating dtype always (the engine checks every gradient); no broadcasting.
#include "autograd/convert.hpp"
#include "autograd/device_detail.hpp"
#include "autograd/engine_detail.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace tg::detail {

namespace {
template <typename T>
void add_loop(T* d, const T* a, const T* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i] = a[i] + b[i];
}
// bfloat16 / float16: both loaded as float32 (autograd/convert.hpp), summed, rounded once.
void reduced_add(DType dt, void* d, const void* a, const void* b, int64_t n) {
  float fa[convert::kChunk], fb[convert::kChunk];
  const size_t es = dtype_size(dt);
  for (int64_t i = 0; i < n; i += convert::kChunk) {
    const int64_t m = std::min(convert::kChunk, n - i);
    convert::to_float(dt, fa, static_cast<const char*>(a) + i * es, m);
    convert::to_float(dt, fb, static_cast<const char*>(b) + i * es, m);
    for (int64_t j = 0; j < m; ++j) fa[j] += fb[j];
    convert::from_float(dt, static_cast<char*>(d) + i * es, fa, m);
  }
}
[[noreturn]] void throw_dtype(DType dt) {
  throw Error(fmt::format("backward: cannot accumulate gradients of dtype {}", dtype_name(dt)));
}
void check_device(const Tensor& dst, const Tensor& src) {
  if (dst.device() != src.device())
    throw Error(fmt::format("backward: cannot accumulate a gradient {} on {} into one on {}",
                            shape_str(src.shape()), src.device().str(), dst.device().str()));
}

// a + b into a new row-major tensor, not recorded.
Tensor plain_sum(const Tensor& a_in, const Tensor& b_in) {
  check_device(a_in, b_in);
  if (a_in.device().type == DeviceType::CUDA) {
    Tensor out = dense_copy(a_in);
    add_into(out, b_in);
    return out;
  }
  const Tensor a = dense(a_in), b = dense(b_in);
  Tensor out = Tensor::empty(a.shape(), a.dtype(), a.device());
  if (a.dtype() == kFloat32)
    add_loop(out.data<float>(), a.data<float>(), b.data<float>(), a.numel());
  else if (a.dtype() == kFloat64)
    add_loop(out.data<double>(), a.data<double>(), b.data<double>(), a.numel());
  else if (is_reduced(a.dtype()))
    reduced_add(a.dtype(), out.data_ptr(), a.data_ptr(), b.data_ptr(), a.numel());
  else
    throw_dtype(a.dtype());
  return out;
}
}  // namespace

void add_into(const Tensor& dst, const Tensor& src_in) {
  const Tensor src = dense(src_in);
  const int64_t n = dst.numel();
  check_device(dst, src);
  if (dst.device().type == DeviceType::CUDA) {
    cuda_add_into(dst, src, "backward (accumulate)");
    return;
  }
  if (dst.dtype() == kFloat32) {
    float* d = dst.data<float>();
    add_loop(d, d, src.data<float>(), n);
  } else if (dst.dtype() == kFloat64) {
    double* d = dst.data<double>();
    add_loop(d, d, src.data<double>(), n);
  } else if (is_reduced(dst.dtype())) {
    reduced_add(dst.dtype(), dst.data_ptr(), dst.data_ptr(), src.data_ptr(), n);
  } else {
    throw_dtype(dst.dtype());
  }
}

Tensor summed(const Tensor& a, const Tensor& b, bool create_graph) {
  Tensor out = plain_sum(a, b);
  if (!create_graph) return out;
  const double n = static_cast<double>(out.numel());
  RecordInfo info = RecordInfo().flops(n, n * (a.requires_grad() + b.requires_grad()));
  record("add", out, {a, b}, info.saves_nothing().differentiable(),
         [](const Tensor& g) -> std::vector<Tensor> {
           return {g, g};
         });
  return out;
}

}  // namespace tg::detail
