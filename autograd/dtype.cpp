// autograd/dtype.cpp — the vocabulary: dtype names and sizes, device names, shapes (numel with
// overflow checks, row-major strides) and the dtype-mismatch error.
#include "autograd/tensor.hpp"

#include <fmt/format.h>

#include <limits>
#include <string>

namespace tg {

// ---- vocabulary ----
const char* dtype_name(DType t) {
  switch (t) {
    case DType::Float32:
      return "float32";
    case DType::Float64:
      return "float64";
    case DType::Int64:
      return "int64";
    case DType::Bool:
      return "bool";
    case DType::BFloat16:
      return "bfloat16";
    case DType::Float16:
      return "float16";
  }
  return "?";
}
size_t dtype_size(DType t) {
  switch (t) {
    case DType::Float32:
      return 4;
    case DType::Float64:
      return 8;
    case DType::Int64:
      return 8;
    case DType::Bool:
      return 1;
    case DType::BFloat16:
    case DType::Float16:
      return 2;
  }
  return 0;
}
DType promote_types(DType a, DType b) {
  if (a == b) return a;
  // bool < int64 < every floating type; then the wider floating type, float32 for the two
  // reduced ones (neither holds the other: bfloat16 has the range, float16 the precision).
  auto rank = [](DType t) {
    switch (t) {
      case DType::Bool:
        return 0;
      case DType::Int64:
        return 1;
      case DType::BFloat16:
      case DType::Float16:
        return 2;
      case DType::Float32:
        return 3;
      case DType::Float64:
        return 4;
    }
    return 0;
  };
  if (is_reduced(a) && is_reduced(b)) return kFloat32;
  return rank(a) >= rank(b) ? a : b;
}
FInfo finfo(DType t) {
  switch (t) {
    case DType::Float32:
      return {32, 0x1p-23, 0x1.fffffep127, -0x1.fffffep127, 0x1p-126, 1e-6, "float32"};
    case DType::Float64:
      return {64,    0x1p-52,  0x1.fffffffffffffp1023, -0x1.fffffffffffffp1023, 0x1p-1022,
              1e-15, "float64"};
    case DType::BFloat16:
      return {16, 0x1p-7, 0x1.fep127, -0x1.fep127, 0x1p-126, 0.01, "bfloat16"};
    case DType::Float16:
      return {16, 0x1p-10, 65504, -65504, 0x1p-14, 0.001, "float16"};
    default:
      throw Error(fmt::format("finfo: dtype {} is not a floating type", dtype_name(t)));
  }
}
std::string Device::str() const {
  return type == DeviceType::CPU ? std::string("cpu") : fmt::format("cuda:{}", index);
}
Device parse_device(const std::string& s) {
  if (s == "cpu") return kCPU;
  if (s == "cuda") return cuda_device(0);
  if (s.rfind("cuda:", 0) == 0 && s.size() > 5 &&
      s.find_first_not_of("0123456789", 5) == std::string::npos && s.size() < 9)
    return cuda_device(std::stoi(s.substr(5)));
  throw Error(fmt::format("device: unknown device \"{}\", expected cpu, cuda or cuda:N", s));
}

// ---- shapes ----
std::string shape_str(const Shape& s) {
  std::string r = "(";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + ")";
}
int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  bool overflow = false;
  for (int64_t d : s) overflow |= __builtin_mul_overflow(n, d, &n);
  if (overflow) {  // unless a dimension is 0: then there are no elements at all
    for (int64_t d : s)
      if (d == 0) return 0;
    throw Error(fmt::format("shape {}: the element count overflows int64 (max {})", shape_str(s),
                            std::numeric_limits<int64_t>::max()));
  }
  return n;
}
Shape contiguous_strides(const Shape& s) {
  Shape st(s.size());
  int64_t acc = 1;
  for (size_t i = s.size(); i-- > 0;) {
    st[i] = acc;
    acc *= s[i];
  }
  return st;
}
void throw_dtype_mismatch(const char* what, DType have, DType want) {
  throw Error(fmt::format("{}: tensor has dtype {}, requested {}", what, dtype_name(have),
                          dtype_name(want)));
}
}  // namespace tg
