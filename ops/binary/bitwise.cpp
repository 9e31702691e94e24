// ops/binary/bitwise.cpp — the bitwise ops and shifts (torch.bitwise_and, _or, _xor, _not,
// bitwise_left_shift, bitwise_right_shift) and their C++ operators (&, |, ^, ~, <<, >>), on int64
// and bool with broadcasting, PyTorch's names and dtype rules: bool is and / or / xor / not,
// floating inputs are refused, a bool tensor with a plain integer computes in int64 (a Python
// int's promotion), shifts take int64 only. No gradient: integer results.
// Deliberately not here: the kernels (ops/binary/cpu/binary.cpp's binary_extra), the logical ops on
// any dtype (ops/binary/math.cpp).
#include "ops/binary/extra_op.hpp"
#include "ops/core/cuda_dispatch.hpp"
#include "ops/core/detail.hpp"

#include <fmt/format.h>

namespace tg {
using namespace detail;
using cpu::XOp;

namespace {
// Both operands of a bitwise op: one device and dtype, int64 (or bool where bool_ok),
// broadcastable.
void check_bitwise(const char* op, const Tensor& a, const Tensor& b, bool bool_ok) {
  check_operands(op, a, b);
  if (a.dtype() != kInt64 && !(bool_ok && a.dtype() == kBool))
    throw Error(fmt::format("{}: input {} and other {} have dtype {}, expected int64{}", op,
                            shape_str(a.shape()), shape_str(b.shape()), dtype_name(a.dtype()),
                            bool_ok ? " or bool" : " (bool and floating dtypes have no shifts)"));
}
Tensor bitwise(const char* op, XOp code, const Tensor& a, const Tensor& b, bool bool_ok) {
  check_bitwise(op, a, b, bool_ok);
  return binary_extra(op, code, a, b);
}
// With a plain integer: b as a 0-dim int64 tensor, a bool a converted to int64 (PyTorch).
Tensor bitwise(const char* op, XOp code, const Tensor& a, int64_t b, bool bool_ok) {
  check_defined(a, op, "input");
  const Tensor x = a.dtype() == kBool ? a.to(kInt64) : a;
  return bitwise(op, code, x, int64_scalar(b, a.device()), bool_ok);
}
}  // namespace

// Each op's tensor and integer forms.
#define TG_BITWISE(name, code, bool_ok)                      \
  Tensor name(const Tensor& a, const Tensor& b, Site site) { \
    SiteScope scope(site);                                   \
    return bitwise(#name, XOp::code, a, b, bool_ok);         \
  }                                                          \
  Tensor name(const Tensor& a, int64_t b, Site site) {       \
    SiteScope scope(site);                                   \
    return bitwise(#name, XOp::code, a, b, bool_ok);         \
  }
TG_BITWISE(bitwise_and, And, true)
TG_BITWISE(bitwise_or, Or, true)
TG_BITWISE(bitwise_xor, Xor, true)
TG_BITWISE(bitwise_left_shift, Shl, false)
TG_BITWISE(bitwise_right_shift, Shr, false)
#undef TG_BITWISE

// ~x is x ^ -1 (every bit flipped); on bool, logical not.
Tensor bitwise_not(const Tensor& a, Site site) {
  SiteScope scope(site);
  check_defined(a, "bitwise_not", "input");
  if (a.dtype() == kBool) return logical_not(a);
  if (a.dtype() != kInt64)
    throw Error(fmt::format("bitwise_not: input {} has dtype {}, expected int64 or bool",
                            shape_str(a.shape()), dtype_name(a.dtype())));
  return binary_extra("bitwise_not", XOp::Xor, a, int64_scalar(-1, a.device()));
}

// ---- operators ----
#define TG_BITWISE_OPERATOR(op, name)                                                 \
  Tensor operator op(const Tensor& a, const Tensor& b) { return name(a, b, Site()); } \
  Tensor operator op(const Tensor& a, int64_t b) { return name(a, b, Site()); }
TG_BITWISE_OPERATOR(&, bitwise_and)
TG_BITWISE_OPERATOR(|, bitwise_or)
TG_BITWISE_OPERATOR(^, bitwise_xor)
TG_BITWISE_OPERATOR(<<, bitwise_left_shift)
TG_BITWISE_OPERATOR(>>, bitwise_right_shift)
#undef TG_BITWISE_OPERATOR
Tensor operator&(int64_t a, const Tensor& b) { return bitwise_and(b, a, Site()); }
Tensor operator|(int64_t a, const Tensor& b) { return bitwise_or(b, a, Site()); }
Tensor operator^(int64_t a, const Tensor& b) { return bitwise_xor(b, a, Site()); }
// a << b with a number a: a as a 0-dim int64 tensor (a bool b computes in int64, as above).
Tensor operator<<(int64_t a, const Tensor& b) {
  check_defined(b, "bitwise_left_shift", "other");
  return bitwise_left_shift(int64_scalar(a, b.device()), b.dtype() == kBool ? b.to(kInt64) : b,
                            Site());
}
Tensor operator>>(int64_t a, const Tensor& b) {
  check_defined(b, "bitwise_right_shift", "other");
  return bitwise_right_shift(int64_scalar(a, b.device()), b.dtype() == kBool ? b.to(kInt64) : b,
                             Site());
}
Tensor operator~(const Tensor& a) { return bitwise_not(a, Site()); }

}  // namespace tg
