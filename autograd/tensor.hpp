// autograd/tensor.hpp — tg::Tensor: a cheap-to-copy handle to shared storage seen through an
// offset, a shape and strides, plus dtype/device/shape vocabulary and tensor creation.
//
// Views as in PyTorch: transpose, permute, t, narrow, slice, select, expand, squeeze, unsqueeze,
// detach, and view/reshape where the strides allow, return tensors on the same storage with
// their own offset and strides (ops/shape/views.cpp). is_contiguous() says whether the elements lie
// in row-major order; contiguous() copies when they do not (free when they do). Kernels read
// contiguous memory: each op makes a strided input contiguous first, so data<T>() refuses a
// non-contiguous tensor, while data_ptr() is PyTorch's (the first element; honour strides()).
// Every storage carries a version counter that in-place writes bump (ops' add_, mul_, fill_,
// copy_, ..., optimizer steps): a backward whose saved tensors changed since they were saved
// throws, naming the op, the tensor and the write.
// Deliberately not here: the ops themselves (ops/), the tape engine (autograd/tape.hpp).
// Tensor methods such as x.sum() or a + b are declared here and defined beside their op in ops/.
#pragma once

#include "autograd/half.hpp"
#include "autograd/site.hpp"

#include <fmt/core.h>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace tg {

// ---- vocabulary -------------------------------------------------------------------------------

// BFloat16 and Float16 (PyTorch's torch.bfloat16 / torch.float16) store 2 bytes an element
// (autograd/half.hpp) and compute in float32: kernels load them as float32, compute, and round
// once when they store (docs/mixed-precision.md).
enum class DType : uint8_t { Float32, Float64, Int64, Bool, BFloat16, Float16 };
constexpr DType kFloat32 = DType::Float32;
constexpr DType kFloat64 = DType::Float64;
constexpr DType kInt64 = DType::Int64;
constexpr DType kBool = DType::Bool;
constexpr DType kBFloat16 = DType::BFloat16;
constexpr DType kFloat16 = DType::Float16;

const char* dtype_name(DType t);  // "float32", "bfloat16", ...
size_t dtype_size(DType t);
inline bool is_reduced(DType t) { return t == DType::BFloat16 || t == DType::Float16; }
inline bool is_floating(DType t) {
  return t == DType::Float32 || t == DType::Float64 || is_reduced(t);
}
// PyTorch's type promotion of two tensors' dtypes (torch.promote_types): bool < int64 < the
// floating types; bfloat16 with float16 gives float32; any reduced type with float32 gives
// float32, with float64 float64. A scalar (double) operand never promotes a floating tensor.
DType promote_types(DType a, DType b);
// PyTorch's torch.finfo: the floating dtype's limits.
struct FInfo {
  int bits;
  double eps;         // the gap between 1 and the next representable value
  double max, min;    // the largest finite value, and its negative
  double tiny;        // the smallest positive normal (PyTorch's smallest_normal)
  double resolution;  // 10^-digits, PyTorch's approximate decimal resolution
  const char* dtype;
};
FInfo finfo(DType t);
// The floating dtype that creation functions (zeros, ones, full, eye, rand, randn,
// scalar_tensor, Tensor::empty) and module parameters get when no dtype is given: float32
// unless set (PyTorch's torch.set_default_dtype; only float32 and float64 are accepted).
void set_default_dtype(DType dtype);
DType get_default_dtype();

// C++ type <-> DType.
template <typename T>
struct dtype_of;
template <>
struct dtype_of<float> {
  static constexpr DType value = DType::Float32;
};
template <>
struct dtype_of<double> {
  static constexpr DType value = DType::Float64;
};
template <>
struct dtype_of<int64_t> {
  static constexpr DType value = DType::Int64;
};
template <>
struct dtype_of<bool> {
  static constexpr DType value = DType::Bool;
};
template <>
struct dtype_of<bfloat16> {
  static constexpr DType value = DType::BFloat16;
};
template <>
struct dtype_of<float16> {
  static constexpr DType value = DType::Float16;
};

enum class DeviceType : uint8_t { CPU, CUDA };
struct Device {
  DeviceType type = DeviceType::CPU;
  int index = 0;
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
  std::string str() const;  // "cpu", "cuda:0"
  bool is_cuda() const { return type == DeviceType::CUDA; }
};
inline const Device kCPU{};
inline Device cuda_device(int index = 0) { return Device{DeviceType::CUDA, index}; }
// "cpu", "cuda", "cuda:1" -> Device; throws naming the string otherwise.
Device parse_device(const std::string& s);
// CUDA devices visible to this process (0 without a GPU or in a build without CUDA).
int cuda_device_count();
bool cuda_is_available();
// Why CUDA cannot be used at all ("this build has no CUDA", or why the CUDA module
// libtapegrad_cuda.so did not load); "" when the kernels are there, even with 0 devices.
std::string cuda_unavailable_reason();
// Waits for every queued kernel on a CUDA device (timing; copies to the host already wait).
void cuda_synchronize(int index = 0);
// The CUDA caching allocator: bytes held by live tensors (and their peak), bytes reserved from
// the driver, and cudaMalloc calls so far; empty_cache returns the unused blocks.
struct CudaMemory {
  size_t allocated = 0, peak_allocated = 0, reserved = 0, peak_reserved = 0;
  int64_t device_mallocs = 0, cache_hits = 0;
};
CudaMemory cuda_memory(int index = 0);
void cuda_reset_peak_memory(int index = 0);
void cuda_empty_cache(int index = 0);
// CPU storages of more than 64 bytes (block allocations, rounded to 64 bytes): bytes held by
// live tensors and their peak since the start or the last reset. Tiny tensors, kept inline in
// their Storage, are not counted.
struct CpuMemory {
  size_t allocated = 0, peak_allocated = 0;
};
CpuMemory cpu_memory();
void cpu_reset_peak_memory();
// TF32 tensor cores for float32 matmuls on CUDA: off by default so results match the CPU.
void cuda_set_allow_tf32(bool on);

using Shape = std::vector<int64_t>;
std::string shape_str(const Shape& s);  // "(2,3,4)"; "()" for a scalar
int64_t shape_numel(const Shape& s);
Shape contiguous_strides(const Shape& s);

// Every error tapegrad raises. The message names the op, the argument and every shape.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

// ---- storage and tensor ---------------------------------------------------------------------

struct Storage {
  void* data = nullptr;
  size_t nbytes = 0;
  Device device;
  // Tensors of up to 64 bytes keep their data here: one allocation less for scalars and tiny ops.
  // Every CPU buffer starts on a 64-byte boundary (the block cache's, and data inside `small`):
  // vectorised kernels then split every tensor the same way, so equal inputs give bit-equal
  // outputs wherever they live. (`small` is 64 bytes plus alignment slack rather than an
  // alignas(64) member: an over-aligned Storage would make every make_shared a memalign, 3 % of
  // a tiny op's time.)
  static constexpr size_t kSmallBytes = 64;
  alignas(16) unsigned char small[kSmallBytes + 48];
  // Bumped by every in-place write (note_inplace_write); shared by all views of this storage.
  uint32_t version = 0;
  const char* last_write = nullptr;  // the op of the latest in-place write
  // Bumped by in-place writes that autograd recorded (the written tensor took a new history):
  // views made before see new values through an old history (RecordInfo::watch).
  uint32_t history = 0;
  // Set for memory the storage does not own (from_blob: e.g. a memory-mapped file): the data is
  // released when the last storage holding `owner` goes, never returned to the block cache.
  std::shared_ptr<void> owner;
  explicit Storage(size_t nbytes, Device device = kCPU);
  Storage(void* external, size_t nbytes, std::shared_ptr<void> owner);  // CPU memory
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
};

class Tensor;
class TensorIndex;  // ops/index/index.hpp
struct Node;
// A gradient hook reads the incoming gradient; returning a defined tensor replaces it.
using GradHook = std::function<Tensor(const Tensor&)>;
// A post-accumulate-grad hook sees a leaf once per backward, after every gradient that backward
// sends to it has been summed into leaf.grad() (PyTorch's register_post_accumulate_grad_hook).
using PostAccumulateGradHook = std::function<void(const Tensor& leaf)>;

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  int64_t offset = 0;  // in elements, into storage
  Shape shape;
  Shape strides;  // in elements, one per dim; empty: row-major contiguous (the common case)
  int64_t numel = 0;
  bool is_view = false;  // made by a view op from another tensor (in-place autograd rules)
  // For a view: the tensor, itself not a view, whose storage it shows (PyTorch's _base). A
  // recorded in-place write through the view rewrites the base's history (ops/inplace/inplace.cpp).
  std::shared_ptr<TensorImpl> base;
  DType dtype = DType::Float32;
  bool requires_grad = false;
  std::shared_ptr<TensorImpl> grad;  // accumulated gradient of a leaf
  std::shared_ptr<Node> grad_fn;     // node that produced this tensor (null for leaves)
  std::vector<GradHook> leaf_hooks;  // hooks of a leaf (a non-leaf keeps them on its node)
  std::vector<PostAccumulateGradHook> post_acc_hooks;  // leaves only
};

// PyTorch's backward(retain_graph, create_graph): create_graph records the backward itself, so the
// gradients it accumulates have a history and can be differentiated again; retain_graph, when
// unset, follows create_graph (docs/tape.md, "Higher order").
struct BackwardOptions {
  std::optional<bool> retain_graph;
  bool create_graph = false;
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // Allocates uninitialised contiguous storage.
  static Tensor empty(const Shape& shape, DType dtype = get_default_dtype(), Device device = kCPU);

  bool defined() const { return impl_ != nullptr; }
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  bool same(const Tensor& o) const { return impl_ == o.impl_; }  // same handle

  // ---- metadata ----
  const Shape& shape() const;
  const Shape& sizes() const { return shape(); }
  Shape strides() const;            // in elements
  int64_t stride(int64_t d) const;  // negative d counts from the end
  int64_t storage_offset() const;   // in elements
  // Elements in row-major order with no gaps (size-1 dims may have any stride).
  bool is_contiguous() const { return impl_ && impl_->strides.empty(); }
  // The storage's version counter: bumped by in-place writes (PyTorch's t._version).
  uint32_t version() const;
  int64_t numel() const;
  int64_t dim() const;
  int64_t size(int64_t d) const;  // negative d counts from the end
  DType dtype() const;
  Device device() const;
  std::string str() const;  // PyTorch-style repr: values (elided when large), shape, dtype

  // ---- raw data ----
  // The first element (storage + offset), device memory for a CUDA tensor; for a
  // non-contiguous tensor the elements are where strides() say.
  void* data_ptr() const;
  template <typename T>
  T* data() const;  // checks that T matches dtype() and that the tensor is contiguous
  template <typename T>
  T item() const;  // one-element tensor -> value converted to T
  template <typename T>
  std::vector<T> to_vector() const;  // converts to T

  // ---- conversions ----
  Tensor to(DType dtype, Site site = Site::here()) const;  // differentiable between float dtypes
  // A copy on `device` (itself when already there); differentiable: the gradient goes back.
  Tensor to(Device device, Site site = Site::here()) const;
  Tensor cuda(int index = 0, Site site = Site::here()) const;
  Tensor cpu(Site site = Site::here()) const;
  bool is_cuda() const { return device().type == DeviceType::CUDA; }
  Tensor clone(Site site = Site::here()) const;  // differentiable copy
  Tensor detach() const;                         // shares storage, no grad history
  // Itself when contiguous, else a differentiable row-major copy.
  Tensor contiguous(Site site = Site::here()) const;

  // ---- autograd ----
  bool requires_grad() const;
  Tensor& requires_grad_(bool on = true);  // leaves only
  bool is_leaf() const;
  Node* grad_fn() const;
  Tensor grad() const;  // undefined until a backward reaches this leaf
  void set_grad(const Tensor& g);
  void zero_grad();   // fills an existing grad with zeros
  void reset_grad();  // grad becomes undefined (PyTorch's set_to_none)
  void backward(const Tensor& grad = Tensor(), BackwardOptions opts = {}) const;
  void backward(BackwardOptions opts) const { backward(Tensor(), opts); }
  void register_hook(GradHook hook);
  // Leaves only: runs hook(*this) once per backward that reaches this leaf, after its gradient
  // for that backward is complete (all uses summed). Not run by tg::grad. Data-parallel training
  // (nn/dist) starts its gradient all-reduce from here.
  void register_post_accumulate_grad_hook(PostAccumulateGradHook hook);

  // ---- ops as methods (defined in ops/); each records its caller's site like the free op ----
  Tensor operator-() const;
  Tensor sum(Site site = Site::here()) const;
  Tensor sum(std::vector<int64_t> dims, bool keepdim = false, Site site = Site::here()) const;
  Tensor mean(Site site = Site::here()) const;
  Tensor mean(std::vector<int64_t> dims, bool keepdim = false, Site site = Site::here()) const;
  Tensor max(Site site = Site::here()) const;
  Tensor max(std::vector<int64_t> dims, bool keepdim = false, Site site = Site::here()) const;
  Tensor var(std::vector<int64_t> dims, bool keepdim = false, int64_t correction = 1,
             Site site = Site::here()) const;
  Tensor argmax(int64_t dim, bool keepdim = false, Site site = Site::here()) const;
  Tensor exp(Site site = Site::here()) const;
  Tensor log(Site site = Site::here()) const;
  Tensor sqrt(Site site = Site::here()) const;
  Tensor abs(Site site = Site::here()) const;
  Tensor tanh(Site site = Site::here()) const;
  Tensor sigmoid(Site site = Site::here()) const;
  Tensor relu(Site site = Site::here()) const;
  Tensor pow(double exponent, Site site = Site::here()) const;
  Tensor reshape(Shape shape, Site site = Site::here()) const;
  Tensor view(Shape shape, Site site = Site::here()) const;
  Tensor transpose(int64_t d0, int64_t d1, Site site = Site::here()) const;
  Tensor permute(std::vector<int64_t> dims, Site site = Site::here()) const;
  Tensor squeeze(int64_t d, Site site = Site::here()) const;
  Tensor unsqueeze(int64_t d, Site site = Site::here()) const;
  Tensor expand(Shape shape, Site site = Site::here()) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length, Site site = Site::here()) const;
  Tensor select(int64_t dim, int64_t index, Site site = Site::here()) const;
  Tensor operator[](int64_t index) const;  // select(0, index)
  Tensor t(Site site = Site::here()) const;
  Tensor index(const std::vector<TensorIndex>& indices, Site site = Site::here()) const;
  // ---- in-place (ops/inplace/inplace.cpp): bump the version counter, return *this ----
  Tensor& add_(const Tensor& other, double alpha = 1, Site site = Site::here());
  Tensor& add_(double other, Site site = Site::here());
  Tensor& sub_(const Tensor& other, Site site = Site::here());
  Tensor& sub_(double other, Site site = Site::here());
  Tensor& mul_(const Tensor& other, Site site = Site::here());
  Tensor& mul_(double other, Site site = Site::here());
  Tensor& div_(const Tensor& other, Site site = Site::here());
  Tensor& div_(double other, Site site = Site::here());
  Tensor& clamp_(std::optional<double> min, std::optional<double> max, Site site = Site::here());
  Tensor& zero_(Site site = Site::here());
  Tensor& fill_(double value, Site site = Site::here());
  Tensor& copy_(const Tensor& src, Site site = Site::here());
  Tensor& masked_fill_(const Tensor& mask, double value, Site site = Site::here());
  Tensor& index_put_(const std::vector<TensorIndex>& indices, const Tensor& value,
                     Site site = Site::here());
  Tensor& index_put_(const std::vector<TensorIndex>& indices, double value,
                     Site site = Site::here());
  Tensor& index_put_(const std::vector<TensorIndex>& indices, const Tensor& values, bool accumulate,
                     Site site = Site::here());
  Tensor& scatter_(int64_t dim, const Tensor& index, const Tensor& src, Site site = Site::here());
  Tensor& scatter_(int64_t dim, const Tensor& index, double value, Site site = Site::here());
  Tensor matmul(const Tensor& other, Site site = Site::here()) const;
  Tensor softmax(int64_t dim, Site site = Site::here()) const;
  Tensor log_softmax(int64_t dim, Site site = Site::here()) const;
  Tensor masked_fill(const Tensor& mask, double value, Site site = Site::here()) const;

 private:
  std::shared_ptr<TensorImpl> impl_;
  void check_defined(const char* what) const;
};

// ---- in-place writes ------------------------------------------------------------------------
// Bumps t's storage version (shared by every view of it) and names `op` as its latest writer.
// Every in-place op and optimizer step calls it; code writing through data<T>() should too, so
// that a backward reading a saved copy of t throws instead of using the new values.
void note_inplace_write(const Tensor& t, const char* op);

namespace detail {
// A row-major copy of x (any device), not recorded; dense(x) is x itself when contiguous. Kernels
// call them on strided inputs; users call Tensor::contiguous().
Tensor dense_copy(const Tensor& x);
Tensor dense(const Tensor& x);
}  // namespace detail

// ---- creation (PyTorch names) ----------------------------------------------------------------
Tensor zeros(const Shape& shape, DType dtype = get_default_dtype(), Device device = kCPU);
// A contiguous CPU tensor over memory tapegrad does not own (PyTorch's from_blob): `owner` keeps
// that memory alive (e.g. a memory-mapped file's mapping) until the last tensor on it goes.
// `data` must be aligned to the dtype's size.
Tensor from_blob(void* data, const Shape& shape, DType dtype, std::shared_ptr<void> owner);
Tensor ones(const Shape& shape, DType dtype = get_default_dtype(), Device device = kCPU);
Tensor full(const Shape& shape, double value, DType dtype = get_default_dtype(),
            Device device = kCPU);
Tensor arange(double end, DType dtype = kInt64);
Tensor arange(double start, double end, double step = 1, DType dtype = kInt64);
Tensor eye(int64_t n, DType dtype = get_default_dtype());
Tensor eye(int64_t n, int64_t m, DType dtype = get_default_dtype());  // (n, m), ones on i == j
Tensor linspace(double start, double end, int64_t steps, DType dtype = get_default_dtype());
// rand/randn/randint on a device draw on the CPU generator and copy: the same seed gives the
// same numbers on every device.
Tensor rand(const Shape& shape, DType dtype = get_default_dtype(),
            Device device = kCPU);  // U[0, 1)
Tensor randn(const Shape& shape, DType dtype = get_default_dtype(),
             Device device = kCPU);  // N(0, 1)
Tensor randint(int64_t low, int64_t high, const Shape& shape, DType dtype = kInt64);
Tensor randint(int64_t high, const Shape& shape, DType dtype = kInt64);  // low 0, as PyTorch
// A random permutation of 0 .. n-1 (int64), e.g. to shuffle a dataset each epoch.
Tensor randperm(int64_t n);
// *_like keep the shape, dtype and device of t.
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
Tensor full_like(const Tensor& t, double value);
Tensor rand_like(const Tensor& t);
Tensor randn_like(const Tensor& t);
Tensor scalar_tensor(double value, DType dtype = get_default_dtype(),
                     Device device = kCPU);  // 0-dim

// From std::vector; the shape defaults to 1-D (use scalar_tensor for 0-dim).
Tensor tensor(const std::vector<float>& values, Shape shape = {});
Tensor tensor(const std::vector<double>& values, Shape shape = {});
Tensor tensor(const std::vector<int64_t>& values, Shape shape = {});
Tensor tensor(const std::vector<bool>& values, Shape shape = {});

// ---- global random generator (seedable) -----------------------------------------------------
void manual_seed(uint64_t seed);
// The generator behind rand/randn/randint/dropout/shuffling: a 64-bit Mersenne twister with our
// own conversions, so the same seed gives the same numbers on every platform.
struct Generator {
  uint64_t next_u64();
  void next_u64s(uint64_t* out, int64_t n);  // n draws at once: the same stream as n next_u64()
  double uniform();                          // [0, 1)
  double normal();                           // N(0, 1), Box–Muller
  uint64_t seed() const { return seed_; }
  void set_seed(uint64_t s);
  std::string get_state() const;  // serialised, for checkpoints
  void set_state(const std::string& s);
  Generator();
  ~Generator();

 private:
  struct State;
  std::unique_ptr<State> st_;
  uint64_t seed_ = 0;
};
Generator& default_generator();

// ---- threads ---------------------------------------------------------------------------------
// One setting for our parallel loops (OpenMP) and OpenBLAS's pool. Default: OMP_NUM_THREADS if
// set, else the number of hardware threads.
void set_num_threads(int n);
int get_num_threads();

// ---- printing --------------------------------------------------------------------------------
std::ostream& operator<<(std::ostream& os, const Tensor& t);

// ---- inline definitions ----------------------------------------------------------------------
[[noreturn]] void throw_dtype_mismatch(const char* what, DType have, DType want);
[[noreturn]] void throw_undefined(const char* what);
[[noreturn]] void throw_not_host(const char* what, const Tensor& t);
[[noreturn]] void throw_not_contiguous(const char* what, const Tensor& t);

inline void Tensor::check_defined(const char* what) const {
  if (!impl_) throw_undefined(what);
}
inline const Shape& Tensor::shape() const {
  check_defined("shape");
  return impl_->shape;
}
inline int64_t Tensor::numel() const {
  check_defined("numel");
  return impl_->numel;
}
inline int64_t Tensor::dim() const {
  check_defined("dim");
  return static_cast<int64_t>(impl_->shape.size());
}
inline DType Tensor::dtype() const {
  check_defined("dtype");
  return impl_->dtype;
}

template <typename T>
T* Tensor::data() const {
  check_defined("data");
  if (impl_->dtype != dtype_of<T>::value)
    throw_dtype_mismatch("data<T>", impl_->dtype, dtype_of<T>::value);
  if (impl_->storage->device.type != DeviceType::CPU) throw_not_host("data<T>", *this);
  if (!impl_->strides.empty()) throw_not_contiguous("data<T>", *this);
  return static_cast<T*>(impl_->storage->data) + impl_->offset;
}

double item_as_double(const Tensor& t);
template <typename T>
T Tensor::item() const {
  return static_cast<T>(item_as_double(*this));
}
template <>
int64_t Tensor::item<int64_t>() const;

template <typename T>
std::vector<T> Tensor::to_vector() const {
  Tensor c = detach().contiguous().to(kCPU).to(dtype_of<T>::value);
  const T* p = c.data<T>();
  return std::vector<T>(p, p + c.numel());
}

}  // namespace tg

// fmt::print("{}", tensor) prints the PyTorch-style repr (Tensor::str()).
template <>
struct fmt::formatter<tg::Tensor> : fmt::formatter<fmt::string_view> {
  template <typename Ctx>
  auto format(const tg::Tensor& t, Ctx& ctx) const {
    std::string s = t.str();
    return fmt::formatter<fmt::string_view>::format(fmt::string_view(s), ctx);
  }
};
