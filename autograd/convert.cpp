// autograd/convert.cpp — the conversion path's dispatch (autograd/convert.hpp), its scalar body and
// the casts between every pair of dtypes. The vector bodies are convert_avx2.cpp and
// convert_avx512.cpp, each compiled with its own instruction-set flags.
#include "autograd/convert.hpp"

#include "autograd/convert_detail.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

namespace tg::convert {
namespace {

void bf16_from_f32_scalar(uint16_t* o, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) o[i] = float_to_bf16(x[i]);
}
void f32_from_bf16_scalar(float* o, const uint16_t* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) o[i] = bf16_to_float(x[i]);
}
void f16_from_f32_scalar(uint16_t* o, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) o[i] = float_to_f16(x[i]);
}
void f32_from_f16_scalar(float* o, const uint16_t* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) o[i] = f16_to_float(x[i]);
}

detail::Bodies make_bodies(Path p) {
  detail::Bodies b{bf16_from_f32_scalar, f32_from_bf16_scalar, f16_from_f32_scalar,
                   f32_from_f16_scalar};
  if (p == Path::Avx2) detail::fill_avx2(b);
  if (p == Path::Avx512Bf16) detail::fill_avx512_bf16(b);
  return b;
}
const detail::Bodies& bodies_of(Path p) {
  static const detail::Bodies all[3] = {make_bodies(Path::Scalar), make_bodies(Path::Avx2),
                                        make_bodies(Path::Avx512Bf16)};
  return all[static_cast<int>(p)];
}
Path best_path() {
  if (const char* env = std::getenv("TG_CONVERT")) {
    for (Path p : {Path::Scalar, Path::Avx2, Path::Avx512Bf16})
      if (std::string(env) == path_name(p)) {
        if (!path_supported(p))
          throw Error(fmt::format("TG_CONVERT={}: this build or CPU does not run that path", env));
        return p;
      }
    throw Error(
        fmt::format("TG_CONVERT={}: unknown path, expected scalar, avx2 or avx512_bf16", env));
  }
  for (Path p : {Path::Avx512Bf16, Path::Avx2})
    if (path_supported(p)) return p;
  return Path::Scalar;
}
std::atomic<int>& current() {
  static std::atomic<int> c{static_cast<int>(best_path())};
  return c;
}
const detail::Bodies& bodies() { return bodies_of(static_cast<Path>(current().load())); }

// One element of a non-reduced dtype as float and back (PyTorch's static_casts).
template <typename T>
void widen(float* o, const T* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) o[i] = static_cast<float>(x[i]);
}
template <typename T>
void narrow(T* o, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<T, bool>)
      o[i] = x[i] != 0;
    else
      o[i] = static_cast<T>(x[i]);
  }
}
// Any dtype to float32, or float32 to any dtype, n elements.
void any_to_float(DType from, float* o, const void* in, int64_t n) {
  switch (from) {
    case kFloat64:
      return widen(o, static_cast<const double*>(in), n);
    case kInt64:
      return widen(o, static_cast<const int64_t*>(in), n);
    case kBool:
      return widen(o, static_cast<const bool*>(in), n);
    default:
      return to_float(from, o, in, n);
  }
}
void float_to_any(DType to, void* out, const float* x, int64_t n) {
  switch (to) {
    case kFloat64:
      return narrow(static_cast<double*>(out), x, n);
    case kInt64:
      return narrow(static_cast<int64_t*>(out), x, n);
    case kBool:
      return narrow(static_cast<bool*>(out), x, n);
    default:
      return from_float(to, out, x, n);
  }
}
}  // namespace

const char* path_name(Path p) {
  switch (p) {
    case Path::Scalar:
      return "scalar";
    case Path::Avx2:
      return "avx2";
    case Path::Avx512Bf16:
      return "avx512_bf16";
  }
  return "?";
}
bool path_supported(Path p) {
  if (p == Path::Scalar) return true;
  detail::Bodies b{};
  return p == Path::Avx2 ? detail::fill_avx2(b) : detail::fill_avx512_bf16(b);
}
Path path() { return static_cast<Path>(current().load()); }
bool set_path(Path p) {
  if (!path_supported(p)) return false;
  current() = static_cast<int>(p);
  return true;
}
void reset_path() { current() = static_cast<int>(best_path()); }

void to_float(DType from, float* out, const void* in, int64_t n) {
  switch (from) {
    case kFloat32:
      if (out != in) std::memcpy(out, in, static_cast<size_t>(n) * 4);
      return;
    case kBFloat16:
      return bodies().f32_from_bf16(out, static_cast<const uint16_t*>(in), n);
    case kFloat16:
      return bodies().f32_from_f16(out, static_cast<const uint16_t*>(in), n);
    default:
      throw Error(fmt::format("convert: to_float reads float32, bfloat16 or float16, not {}",
                              dtype_name(from)));
  }
}
void from_float(DType to, void* out, const float* in, int64_t n) {
  switch (to) {
    case kFloat32:
      if (out != in) std::memcpy(out, in, static_cast<size_t>(n) * 4);
      return;
    case kBFloat16:
      return bodies().bf16_from_f32(static_cast<uint16_t*>(out), in, n);
    case kFloat16:
      return bodies().f16_from_f32(static_cast<uint16_t*>(out), in, n);
    default:
      throw Error(fmt::format("convert: from_float writes float32, bfloat16 or float16, not {}",
                              dtype_name(to)));
  }
}

void elements(DType from, DType to, void* out, const void* in, int64_t n) {
  if (from == to) {
    std::memcpy(out, in, static_cast<size_t>(n) * dtype_size(from));
    return;
  }
  // float32 on either side, with a reduced type on the other: one pass.
  if (from == kFloat32 && is_reduced(to))
    return from_float(to, out, static_cast<const float*>(in), n);
  if (to == kFloat32 && is_reduced(from)) return to_float(from, static_cast<float*>(out), in, n);
  if (!is_reduced(from) && !is_reduced(to))
    throw Error(fmt::format("convert: {} to {} is Tensor::to's own cast", dtype_name(from),
                            dtype_name(to)));
  // Everything else passes through float32 in chunks (the reduced side's values are floats).
  float buf[kChunk];
  const size_t in_size = dtype_size(from), out_size = dtype_size(to);
  for (int64_t i = 0; i < n; i += kChunk) {
    const int64_t m = std::min(kChunk, n - i);
    any_to_float(from, buf, static_cast<const char*>(in) + i * in_size, m);
    float_to_any(to, static_cast<char*>(out) + i * out_size, buf, m);
  }
}

}  // namespace tg::convert
