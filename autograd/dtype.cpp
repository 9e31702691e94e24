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
  }
  return 0;
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
