// autograd/tensor.cpp — the tensor: metadata, conversion (to/clone/detach), the autograd entry
// points of a tensor, and creation. The vocabulary is in dtype.cpp, storage in storage.cpp, the
// generator in random.cpp, the device runtime and thread setting in device.cpp.
#include "autograd/tensor.hpp"

#include "autograd/convert.hpp"
#include "autograd/copy_detail.hpp"
#include "autograd/device_detail.hpp"
#include "autograd/tape.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <utility>

namespace tg {
using detail::check_cuda_index;

// ---- tensor metadata ----
void throw_not_host(const char* what, const Tensor& t) {
  throw Error(fmt::format("{}: tensor {} {} is on {}; copy it with .cpu() to read it on the host",
                          what, shape_str(t.shape()), dtype_name(t.dtype()), t.device().str()));
}
void throw_undefined(const char* what) {
  throw Error(fmt::format("{}: tensor is undefined", what));
}
Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  for (int64_t d : shape)
    if (d < 0) throw Error(fmt::format("empty: negative dimension in shape {}", shape_str(shape)));
  auto impl = std::make_shared<TensorImpl>();
  impl->shape = shape;
  impl->numel = shape_numel(shape);
  impl->dtype = dtype;
  int64_t nbytes = 0;  // a multiply with an overflow flag, not a division per allocation
  if (__builtin_mul_overflow(impl->numel, static_cast<int64_t>(dtype_size(dtype)), &nbytes))
    throw Error(fmt::format("empty: shape {} of {} needs more than 2^63 bytes", shape_str(shape),
                            dtype_name(dtype)));
  impl->storage = std::make_shared<Storage>(impl->numel * dtype_size(dtype), device);
  return Tensor(std::move(impl));
}
Tensor from_blob(void* data, const Shape& shape, DType dtype, std::shared_ptr<void> owner) {
  for (int64_t d : shape)
    if (d < 0)
      throw Error(fmt::format("from_blob: negative dimension in shape {}", shape_str(shape)));
  if (reinterpret_cast<uintptr_t>(data) % dtype_size(dtype) != 0)
    throw Error(fmt::format("from_blob: data at {} is not aligned to {}'s {} bytes", data,
                            dtype_name(dtype), dtype_size(dtype)));
  auto impl = std::make_shared<TensorImpl>();
  impl->shape = shape;
  impl->numel = shape_numel(shape);
  impl->dtype = dtype;
  impl->storage =
      std::make_shared<Storage>(data, impl->numel * dtype_size(dtype), std::move(owner));
  return Tensor(std::move(impl));
}
int64_t Tensor::size(int64_t d) const {
  int64_t n = dim();
  int64_t dd = d < 0 ? d + n : d;
  if (dd < 0 || dd >= n)
    throw Error(
        fmt::format("size: dim {} out of range for a tensor of shape {}", d, shape_str(shape())));
  return impl_->shape[dd];
}
Device Tensor::device() const {
  check_defined("device");
  return impl_->storage->device;
}
void* Tensor::data_ptr() const {
  check_defined("data_ptr");
  return static_cast<char*>(impl_->storage->data) + impl_->offset * dtype_size(impl_->dtype);
}
Shape Tensor::strides() const {
  check_defined("strides");
  return impl_->strides.empty() ? contiguous_strides(impl_->shape) : impl_->strides;
}
int64_t Tensor::stride(int64_t d) const {
  const int64_t n = dim();
  const int64_t dd = d < 0 ? d + n : d;
  if (dd < 0 || dd >= n)
    throw Error(
        fmt::format("stride: dim {} out of range for a tensor of shape {}", d, shape_str(shape())));
  return strides()[dd];
}
int64_t Tensor::storage_offset() const {
  check_defined("storage_offset");
  return impl_->offset;
}
uint32_t Tensor::version() const {
  check_defined("version");
  return impl_->storage->version;
}
void throw_not_contiguous(const char* what, const Tensor& t) {
  throw Error(
      fmt::format("{}: tensor {} with strides {} is not contiguous; call .contiguous() "
                  "first (or read it through data_ptr() and strides())",
                  what, shape_str(t.shape()), shape_str(t.strides())));
}
void note_inplace_write(const Tensor& t, const char* op) {
  if (!t.defined()) throw_undefined(op);
  Storage& s = *t.impl()->storage;
  ++s.version;
  s.last_write = op;
}

namespace {
DType g_default_dtype = kFloat32;
}  // namespace
void set_default_dtype(DType dtype) {
  if (!is_floating(dtype))
    throw Error(fmt::format("set_default_dtype: dtype must be float32 or float64, got {}",
                            dtype_name(dtype)));
  g_default_dtype = dtype;
}
DType get_default_dtype() { return g_default_dtype; }

// ---- strided copies ----
namespace detail {
namespace {
// out (contiguous) = x seen through shape/strides, dims [d, n); T only fixes the element size.
template <typename T>
void copy_dims(T* out, const T* x, const Shape& shape, const Shape& st, size_t d, int64_t& pos) {
  const int64_t n = shape[d], s = st[d];
  if (d + 1 == shape.size()) {
    if (s == 1) {
      std::memcpy(out + pos, x, n * sizeof(T));
    } else {
      for (int64_t i = 0; i < n; ++i) out[pos + i] = x[i * s];
    }
    pos += n;
    return;
  }
  for (int64_t i = 0; i < n; ++i) copy_dims(out, x + i * s, shape, st, d + 1, pos);
}
template <typename T>
void dense_cpu(void* out, const void* x, const Shape& shape, const Shape& st) {
  int64_t pos = 0;
  copy_dims(static_cast<T*>(out), static_cast<const T*>(x), shape, st, 0, pos);
}
}  // namespace

namespace {
CpuStridedCopy g_cpu_strided_copy = nullptr;  // set by ops/shape/views.cpp at start-up
}  // namespace
void set_cpu_strided_copy(CpuStridedCopy f) { g_cpu_strided_copy = f; }

Tensor dense_copy(const Tensor& x) {
  Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (x.numel() == 0) return out;
  const Shape st = x.strides();
  if (x.device().type == DeviceType::CUDA) {
    detail::cuda_dense_copy(out, x, "contiguous");
    return out;
  }
  if (x.dim() == 0) {
    std::memcpy(out.data_ptr(), x.data_ptr(), dtype_size(x.dtype()));
    return out;
  }
  if (g_cpu_strided_copy) {
    g_cpu_strided_copy(x.dtype(), out.data_ptr(), x.data_ptr(), st, x.shape());
    return out;
  }
  switch (dtype_size(x.dtype())) {
    case 1:
      dense_cpu<uint8_t>(out.data_ptr(), x.data_ptr(), x.shape(), st);
      break;
    case 2:
      dense_cpu<uint16_t>(out.data_ptr(), x.data_ptr(), x.shape(), st);
      break;
    case 4:
      dense_cpu<uint32_t>(out.data_ptr(), x.data_ptr(), x.shape(), st);
      break;
    default:
      dense_cpu<uint64_t>(out.data_ptr(), x.data_ptr(), x.shape(), st);
      break;
  }
  return out;
}
Tensor dense(const Tensor& x) { return !x.defined() || x.is_contiguous() ? x : dense_copy(x); }
}  // namespace detail

Tensor Tensor::contiguous(Site site) const {
  check_defined("contiguous");
  if (is_contiguous()) return *this;
  SiteScope scope(site);
  Tensor out = detail::dense_copy(*this);
  // data movement only: the gradient of a layout change is the gradient itself
  record("contiguous", out, {*this}, RecordInfo().flops(0, 0).saves_nothing().differentiable(),
         [](const Tensor& g) -> std::vector<Tensor> { return {g}; });
  return out;
}

double item_as_double(const Tensor& t) {
  if (t.numel() != 1)
    throw Error(fmt::format("item: tensor of shape {} has {} elements, expected 1",
                            shape_str(t.shape()), t.numel()));
  if (t.device().type != DeviceType::CPU) return item_as_double(t.detach().to(kCPU));
  if (!t.is_contiguous()) return item_as_double(detail::dense(t));
  switch (t.dtype()) {
    case kFloat32:
      return *t.data<float>();
    case kFloat64:
      return *t.data<double>();
    case kInt64:
      return static_cast<double>(*t.data<int64_t>());
    case kBool:
      return *t.data<bool>() ? 1.0 : 0.0;
    case kBFloat16:
      return static_cast<float>(*t.data<bfloat16>());
    case kFloat16:
      return static_cast<float>(*t.data<float16>());
  }
  return 0;
}
template <>
int64_t Tensor::item<int64_t>() const {
  if (dtype() == kInt64) {
    if (numel() != 1)
      throw Error(fmt::format("item: tensor of shape {} has {} elements, expected 1",
                              shape_str(shape()), numel()));
    if (device().type != DeviceType::CPU) return detach().to(kCPU).item<int64_t>();
    return *static_cast<const int64_t*>(data_ptr());
  }
  return static_cast<int64_t>(item_as_double(*this));
}

// ---- conversions ----
namespace {
template <typename Dst, typename Src>
void convert(Dst* d, const Src* s, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i] = static_cast<Dst>(s[i]);
}
template <typename Dst>
void convert_from(Dst* d, const Tensor& src) {
  int64_t n = src.numel();
  switch (src.dtype()) {
    case kFloat32:
      convert(d, src.data<float>(), n);
      break;
    case kFloat64:
      convert(d, src.data<double>(), n);
      break;
    case kInt64:
      convert(d, src.data<int64_t>(), n);
      break;
    case kBool:
      convert(d, src.data<bool>(), n);
      break;
    default:  // the reduced types: convert::elements
      break;
  }
}
Tensor convert_tensor(const Tensor& src_in, DType dtype) {
  const Tensor src = detail::dense(src_in);
  if (src.device().type == DeviceType::CUDA) {
    Tensor out = Tensor::empty(src.shape(), dtype, src.device());
    detail::cuda_cast(out, src, "to");
    return out;
  }
  Tensor out = Tensor::empty(src.shape(), dtype);
  if (is_reduced(dtype) || is_reduced(src.dtype())) {  // the one conversion path
    convert::elements(src.dtype(), dtype, out.data_ptr(), src.data_ptr(), src.numel());
    return out;
  }
  switch (dtype) {
    case kFloat32:
      convert_from(out.data<float>(), src);
      break;
    case kFloat64:
      convert_from(out.data<double>(), src);
      break;
    case kInt64:
      convert_from(out.data<int64_t>(), src);
      break;
    case kBool: {
      bool* d = out.data<bool>();
      Tensor s64 = src.dtype() == kBool ? src : Tensor();
      if (s64.defined()) {
        std::memcpy(d, src.data_ptr(), src.numel());
      } else {
        switch (src.dtype()) {
          case kFloat32:
            for (int64_t i = 0; i < src.numel(); ++i) d[i] = src.data<float>()[i] != 0;
            break;
          case kFloat64:
            for (int64_t i = 0; i < src.numel(); ++i) d[i] = src.data<double>()[i] != 0;
            break;
          case kInt64:
            for (int64_t i = 0; i < src.numel(); ++i) d[i] = src.data<int64_t>()[i] != 0;
            break;
          default:
            break;
        }
      }
      break;
    }
    default:
      break;
  }
  return out;
}
}  // namespace

Tensor Tensor::to(DType dtype, Site site) const {
  SiteScope scope(site);
  check_defined("to");
  if (dtype == this->dtype()) return *this;
  Tensor out = convert_tensor(*this, dtype);
  if (is_floating(dtype) && is_floating(this->dtype())) {
    DType in_dtype = this->dtype();
    record("to", out, {*this}, RecordInfo().saves_nothing().differentiable(),
           [in_dtype](const Tensor& g) -> std::vector<Tensor> {
             if (creating_graph()) return {g.to(in_dtype)};
             return {convert_tensor(g, in_dtype)};
           });
  }
  return out;
}
namespace {
// Copies the bytes of src (any device) into a new tensor on `device`; no tape.
Tensor copy_to(const Tensor& src_in, Device device) {
  const Tensor src = detail::dense(src_in);
  Tensor out = Tensor::empty(src.shape(), src.dtype(), device);
  const size_t bytes = src.numel() * dtype_size(src.dtype());
  const Device from = src.device();
  if (from.type == DeviceType::CPU && device.type == DeviceType::CPU)
    std::memcpy(out.data_ptr(), src.data_ptr(), bytes);
  else
    detail::cuda_copy_bytes(out.data_ptr(), device, src.data_ptr(), from, bytes, "to");
  return out;
}
}  // namespace

Tensor Tensor::to(Device device, Site site) const {
  SiteScope scope(site);
  check_defined("to");
  if (device == this->device()) return *this;
  if (device.type == DeviceType::CUDA) check_cuda_index(device.index, "to");
  Tensor out = copy_to(*this, device);
  if (is_floating(dtype())) {
    const Device back = this->device();
    record("to", out, {*this}, RecordInfo().saves_nothing().differentiable(),
           [back](const Tensor& g) -> std::vector<Tensor> {
             return {creating_graph() ? g.to(back) : copy_to(g, back)};
           });
  }
  return out;
}
Tensor Tensor::cuda(int index, Site site) const { return to(cuda_device(index), site); }
Tensor Tensor::cpu(Site site) const { return to(kCPU, site); }

Tensor Tensor::clone(Site site) const {
  SiteScope scope(site);
  check_defined("clone");
  Tensor out = copy_to(*this, device());
  record("clone", out, {*this}, RecordInfo().saves_nothing().differentiable(),
         [](const Tensor& g) -> std::vector<Tensor> { return {g}; });
  return out;
}
Tensor Tensor::detach() const {
  check_defined("detach");
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = impl_->storage;
  impl->offset = impl_->offset;
  impl->shape = impl_->shape;
  impl->strides = impl_->strides;
  impl->numel = impl_->numel;
  impl->dtype = impl_->dtype;
  // not a view for autograd: a write through it stays outside every history (PyTorch's detach)
  return Tensor(std::move(impl));
}

// ---- autograd entry points ----
bool Tensor::requires_grad() const { return impl_ && impl_->requires_grad; }
Tensor& Tensor::requires_grad_(bool on) {
  check_defined("requires_grad_");
  if (impl_->grad_fn && !on)
    throw Error("requires_grad_: cannot turn off requires_grad of a non-leaf tensor; use detach()");
  if (on && !is_floating(impl_->dtype))
    throw Error(fmt::format("requires_grad_: only floating-point tensors can require grad, got {}",
                            dtype_name(impl_->dtype)));
  impl_->requires_grad = on;
  return *this;
}
bool Tensor::is_leaf() const { return !impl_ || !impl_->grad_fn; }
Node* Tensor::grad_fn() const { return impl_ ? impl_->grad_fn.get() : nullptr; }
Tensor Tensor::grad() const {
  check_defined("grad");
  return impl_->grad ? Tensor(impl_->grad) : Tensor();
}
void Tensor::set_grad(const Tensor& g) {
  check_defined("set_grad");
  if (g.defined() && (g.shape() != shape() || g.dtype() != dtype()))
    throw Error(fmt::format("set_grad: gradient {} {} does not match tensor {} {}",
                            shape_str(g.shape()), dtype_name(g.dtype()), shape_str(shape()),
                            dtype_name(dtype())));
  // A strided view is stored as a row-major copy: zero_grad, clipping and the optimizers write the
  // gradient as flat memory.
  impl_->grad = g.defined() ? detail::dense(g).impl_ptr() : nullptr;
}
void Tensor::zero_grad() {
  check_defined("zero_grad");
  if (!impl_->grad) return;
  if (impl_->grad->grad_fn) {  // a create_graph gradient belongs to a graph: never write into it
    impl_->grad = zeros(shape(), dtype(), device()).impl_ptr();
    return;
  }
  Tensor g(impl_->grad);
  const size_t bytes = g.numel() * dtype_size(g.dtype());
  if (g.device().type == DeviceType::CUDA)
    detail::cuda_zero(g.data_ptr(), bytes, g.device(), "zero_grad");
  else
    std::memset(g.data_ptr(), 0, bytes);
}
void Tensor::reset_grad() {
  check_defined("reset_grad");
  impl_->grad.reset();
}
void Tensor::backward(const Tensor& grad, BackwardOptions opts) const {
  check_defined("backward");
  tg::backward_one(*this, grad, opts.retain_graph.value_or(opts.create_graph), opts.create_graph);
}
void Tensor::register_hook(GradHook hook) {
  check_defined("register_hook");
  if (!requires_grad())
    throw Error("register_hook: cannot register a hook on a tensor that does not require grad");
  if (impl_->grad_fn)
    impl_->grad_fn->hooks.push_back(std::move(hook));
  else
    impl_->leaf_hooks.push_back(std::move(hook));
}

namespace detail {
void note_post_accumulate_hook();  // autograd/hooks.cpp: backward counts uses from now on
}
void Tensor::register_post_accumulate_grad_hook(PostAccumulateGradHook hook) {
  check_defined("register_post_accumulate_grad_hook");
  if (!requires_grad() || impl_->grad_fn)
    throw Error(fmt::format(
        "register_post_accumulate_grad_hook: tensor {} is not a leaf that requires grad",
        shape_str(shape())));
  impl_->post_acc_hooks.push_back(std::move(hook));
  detail::note_post_accumulate_hook();
}

// ---- creation ----
namespace {
template <typename F>
Tensor fill_with(const Shape& shape, DType dtype, F value_at) {
  Tensor t = Tensor::empty(shape, dtype);
  int64_t n = t.numel();
  switch (dtype) {
    case kFloat32: {
      float* p = t.data<float>();
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(value_at(i));
      break;
    }
    case kFloat64: {
      double* p = t.data<double>();
      for (int64_t i = 0; i < n; ++i) p[i] = value_at(i);
      break;
    }
    case kInt64: {
      int64_t* p = t.data<int64_t>();
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<int64_t>(value_at(i));
      break;
    }
    case kBool: {
      bool* p = t.data<bool>();
      for (int64_t i = 0; i < n; ++i) p[i] = value_at(i) != 0;
      break;
    }
    case kBFloat16:
    case kFloat16: {  // each value rounded to float32, then once to the reduced type
      float buf[convert::kChunk];
      for (int64_t i = 0; i < n; i += convert::kChunk) {
        const int64_t m = std::min(convert::kChunk, n - i);
        for (int64_t j = 0; j < m; ++j) buf[j] = static_cast<float>(value_at(i + j));
        convert::from_float(dtype, static_cast<uint16_t*>(t.data_ptr()) + i, buf, m);
      }
      break;
    }
  }
  return t;
}
}  // namespace

Tensor full(const Shape& shape, double v, DType dtype, Device device) {
  // NaN, ±inf and values outside [-2^63, 2^63) have no int64 (the cast would be UB); PyTorch
  // refuses them too.
  if (dtype == kInt64 && !(v >= -9223372036854775808.0 && v < 9223372036854775808.0))
    throw Error(
        fmt::format("full: value {} cannot be converted to type int64 without overflow (shape {})",
                    v, shape_str(shape)));
  if (device.type == DeviceType::CPU) return fill_with(shape, dtype, [v](int64_t) { return v; });
  Tensor t = Tensor::empty(shape, dtype, device);
  detail::cuda_fill(t, v, "full");
  return t;
}
Tensor zeros(const Shape& shape, DType dtype, Device device) {
  if (device.type == DeviceType::CPU) return fill_with(shape, dtype, [](int64_t) { return 0.0; });
  Tensor t = Tensor::empty(shape, dtype, device);
  detail::cuda_zero(t.data_ptr(), t.numel() * dtype_size(dtype), device, "zeros");
  return t;
}
Tensor ones(const Shape& shape, DType dtype, Device device) {
  return full(shape, 1.0, dtype, device);
}
Tensor arange(double end, DType dtype) { return arange(0, end, 1, dtype); }
// PyTorch's rules: float dtypes count ceil((end - start) / step) values start + i·step computed in
// double (float32 rounds each); int64 first truncates start, end and step to int64 (so a step
// of 0.5 is 0, an error) and counts and steps in integers, exact past 2^53.
Tensor arange(double start, double end, double step, DType dtype) {
  if (dtype == kBool)
    throw Error("arange: dtype bool is not supported (float32, float64 or int64), like PyTorch");
  auto bad_range = [&] {
    return Error(fmt::format("arange: invalid range start={} end={} step={}", start, end, step));
  };
  if (!std::isfinite(start) || !std::isfinite(end) || !std::isfinite(step)) throw bad_range();
  if (dtype == kInt64) {
    constexpr double kLim = 9223372036854775807.0;  // 2^63: int64 cannot hold a bound this large
    if (std::fabs(start) >= kLim || std::fabs(end) >= kLim || std::fabs(step) >= kLim)
      throw Error(
          fmt::format("arange: start={} end={} step={} do not fit int64", start, end, step));
    const int64_t s = static_cast<int64_t>(start), e = static_cast<int64_t>(end),
                  st = static_cast<int64_t>(step);
    if (st == 0)
      throw Error(fmt::format("arange: step {} truncates to 0 for dtype int64 (start={} end={})",
                              step, start, end));
    if ((st > 0 && e < s) || (st < 0 && e > s)) throw bad_range();
    const int64_t n =
        static_cast<int64_t>(std::ceil(static_cast<double>(e - s) / static_cast<double>(st)));
    Tensor t = Tensor::empty({n}, kInt64);
    int64_t* p = t.data<int64_t>();
    for (int64_t i = 0; i < n; ++i) p[i] = s + i * st;
    return t;
  }
  if (step == 0 || (end - start) / step < 0) throw bad_range();
  int64_t n = static_cast<int64_t>(std::ceil((end - start) / step));
  return fill_with({n}, dtype, [=](int64_t i) { return start + static_cast<double>(i) * step; });
}
Tensor eye(int64_t n, DType dtype) { return eye(n, n, dtype); }
Tensor eye(int64_t n, int64_t m, DType dtype) {
  if (n < 0 || m < 0) throw Error(fmt::format("eye: n and m must be >= 0, got {} and {}", n, m));
  if (m == 0) return fill_with({n, m}, dtype, [](int64_t) { return 0.0; });
  return fill_with({n, m}, dtype, [m](int64_t i) { return (i / m == i % m) ? 1.0 : 0.0; });
}
namespace {
// int64 linspace as PyTorch computes it: start and end converted to int64 first (toward 0), each
// value then computed in double by the floating formula and truncated toward 0 again:
// linspace(0, 10, 4) = [0, 3, 6, 10], linspace(-2.5, 2.5, 6) = [-2, -1, 0, 0, 1, 2]. A value
// that rounds past int64's range in double saturates (PyTorch's conversion is undefined there).
Tensor linspace_int64(double start, double end, int64_t steps) {
  for (const auto& [name, v] : {std::pair<const char*, double>{"start", start}, {"end", end}})
    if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0))  // [-2^63, 2^63)
      throw Error(fmt::format(
          "linspace: {} {} cannot be converted to int64 without overflow (dtype int64)", name, v));
  const int64_t s = static_cast<int64_t>(start), e = static_cast<int64_t>(end);
  const double step =
      steps > 1 ? (static_cast<double>(e) - static_cast<double>(s)) / static_cast<double>(steps - 1)
                : 0.0;
  const int64_t half = steps / 2;
  Tensor t = Tensor::empty({steps}, kInt64);
  int64_t* p = t.data<int64_t>();
  if (steps == 1) p[0] = s;
  for (int64_t i = 0; i < steps && steps > 1; ++i) {
    const double v = i < half ? static_cast<double>(s) + step * static_cast<double>(i)
                              : static_cast<double>(e) - step * static_cast<double>(steps - i - 1);
    p[i] = v >= 9223372036854775808.0   ? std::numeric_limits<int64_t>::max()
           : v < -9223372036854775808.0 ? std::numeric_limits<int64_t>::min()
                                        : static_cast<int64_t>(v);
  }
  return t;
}
}  // namespace

// torch.linspace: start + i·(end − start)/(steps − 1), the second half counted back from end
// (so the last value is end exactly), as PyTorch's kernel does; int64 as linspace_int64.
Tensor linspace(double start, double end, int64_t steps, DType dtype) {
  if (steps < 0) throw Error(fmt::format("linspace: number of steps must be >= 0, got {}", steps));
  if (dtype == kInt64) return linspace_int64(start, end, steps);
  if (!is_floating(dtype))
    throw Error(fmt::format("linspace: dtype must be float32, float64 or int64, got {}",
                            dtype_name(dtype)));
  if (steps == 1) return fill_with({1}, dtype, [start](int64_t) { return start; });
  const double step = steps > 1 ? (end - start) / static_cast<double>(steps - 1) : 0.0;
  const int64_t half = steps / 2;
  return fill_with({steps}, dtype, [=](int64_t i) {
    return i < half ? start + step * static_cast<double>(i)
                    : end - step * static_cast<double>(steps - i - 1);
  });
}
Tensor rand(const Shape& shape, DType dtype, Device device) {
  if (device.type != DeviceType::CPU) return copy_to(rand(shape, dtype), device);
  if (!is_floating(dtype))
    throw Error(fmt::format("rand: dtype must be floating, got {}", dtype_name(dtype)));
  Generator& g = default_generator();
  return fill_with(shape, dtype, [&g](int64_t) { return g.uniform(); });
}
Tensor randn(const Shape& shape, DType dtype, Device device) {
  if (device.type != DeviceType::CPU) return copy_to(randn(shape, dtype), device);
  if (!is_floating(dtype))
    throw Error(fmt::format("randn: dtype must be floating, got {}", dtype_name(dtype)));
  Generator& g = default_generator();
  return fill_with(shape, dtype, [&g](int64_t) { return g.normal(); });
}
Tensor randint(int64_t high, const Shape& shape, DType dtype) {
  return randint(0, high, shape, dtype);
}
Tensor randint(int64_t low, int64_t high, const Shape& shape, DType dtype) {
  if (high <= low) throw Error(fmt::format("randint: high ({}) must be > low ({})", high, low));
  Generator& g = default_generator();
  uint64_t range = static_cast<uint64_t>(high - low);
  return fill_with(shape, dtype, [&g, low, range](int64_t) {
    return static_cast<double>(low + static_cast<int64_t>(g.next_u64() % range));
  });
}
Tensor randperm(int64_t n) {
  if (n < 0) throw Error(fmt::format("randperm: n must be >= 0, got {}", n));
  Tensor t = arange(0, static_cast<double>(n), 1, kInt64);
  int64_t* p = t.data<int64_t>();
  Generator& g = default_generator();
  for (int64_t i = n - 1; i > 0; --i) {  // Fisher–Yates
    int64_t j = static_cast<int64_t>(g.next_u64() % static_cast<uint64_t>(i + 1));
    std::swap(p[i], p[j]);
  }
  return t;
}
Tensor zeros_like(const Tensor& t) { return zeros(t.shape(), t.dtype(), t.device()); }
Tensor ones_like(const Tensor& t) { return ones(t.shape(), t.dtype(), t.device()); }
Tensor full_like(const Tensor& t, double v) { return full(t.shape(), v, t.dtype(), t.device()); }
Tensor rand_like(const Tensor& t) { return rand(t.shape(), t.dtype(), t.device()); }
Tensor randn_like(const Tensor& t) { return randn(t.shape(), t.dtype(), t.device()); }
Tensor scalar_tensor(double v, DType dtype, Device device) { return full({}, v, dtype, device); }

namespace {
template <typename T>
Tensor from_values(const std::vector<T>& v, Shape shape, const char* what) {
  if (shape.empty()) shape = {static_cast<int64_t>(v.size())};  // 1-D, like torch.tensor([...])
  if (shape_numel(shape) != static_cast<int64_t>(v.size()))
    throw Error(fmt::format("tensor: {} values do not fill shape {} ({} elements)", v.size(),
                            shape_str(shape), shape_numel(shape)));
  (void)what;
  Tensor t = Tensor::empty(shape, dtype_of<T>::value);
  T* p = t.data<T>();
  for (size_t i = 0; i < v.size(); ++i) p[i] = v[i];
  return t;
}
}  // namespace
Tensor tensor(const std::vector<float>& v, Shape s) {
  return from_values(v, std::move(s), "float");
}
Tensor tensor(const std::vector<double>& v, Shape s) {
  return from_values(v, std::move(s), "double");
}
Tensor tensor(const std::vector<int64_t>& v, Shape s) {
  return from_values(v, std::move(s), "int64");
}
Tensor tensor(const std::vector<bool>& v, Shape s) { return from_values(v, std::move(s), "bool"); }
}  // namespace tg
