// ops/pending_h1.hpp — new public declarations of issue 40's integer and division work, kept out
// of ops/ops.hpp until the merge (every file includes ops.hpp). Each group names where it belongs
// in ops.hpp; nothing else is here.
#pragma once

#include "ops/ops.hpp"

#include <string>
#include <type_traits>

namespace tg {

// ---- belongs in ops.hpp beside fmod / remainder (binary_math.cpp) ----
// torch.div(input, other, rounding_mode=...): "floor" (Python's //) or "trunc" (toward zero).
// float32/float64 keep their dtype, with a zero gradient for both operands (PyTorch's);
// int64 stays int64, and a zero divisor raises ZeroDivisionError as PyTorch does. INT64_MIN / -1
// wraps to INT64_MIN (PyTorch 1.13 dies of SIGFPE there). True division is div(a, b), where
// int64 operands promote to the default float dtype.
Tensor div(const Tensor& a, const Tensor& b, const std::string& rounding_mode,
           Site site = Site::here());
// A plain number b: beside an int64 tensor, a b that holds an integer counts as a Python int
// (the result stays int64), any other (2.5, inf, NaN, 1e20) as a Python float (the tensor
// promotes to the default float dtype); so do fmod, remainder and pow with a number.
Tensor div(const Tensor& a, double b, const std::string& rounding_mode, Site site = Site::here());
// torch.floor_divide: div(a, b, "floor") (PyTorch 1.13 has no derivative for it: zeros here).
Tensor floor_divide(const Tensor& a, const Tensor& b, Site site = Site::here());
Tensor floor_divide(const Tensor& a, double b, Site site = Site::here());

// ---- belongs in ops.hpp after the comparisons (a new "bitwise" group, ops/bitwise.cpp) ----
// torch.bitwise_and / _or / _xor / _not on int64 or bool (bool: logical and, or, xor, not),
// broadcasting; both operands of one dtype; floating inputs refused, naming op and dtype (as
// PyTorch). No gradient. The number forms take an integer: a bool tensor with a number computes
// in int64 (PyTorch's promotion of a Python int), and a floating number does not compile.
Tensor bitwise_and(const Tensor& a, const Tensor& b, Site site = Site::here());
Tensor bitwise_or(const Tensor& a, const Tensor& b, Site site = Site::here());
Tensor bitwise_xor(const Tensor& a, const Tensor& b, Site site = Site::here());
Tensor bitwise_and(const Tensor& a, int64_t b, Site site = Site::here());
Tensor bitwise_or(const Tensor& a, int64_t b, Site site = Site::here());
Tensor bitwise_xor(const Tensor& a, int64_t b, Site site = Site::here());
Tensor bitwise_not(const Tensor& a, Site site = Site::here());
// torch.bitwise_left_shift / bitwise_right_shift on int64 (bool refused, as PyTorch): a · 2^b
// wrapping, and the arithmetic shift (sign-filling). Shift counts outside [0, 63] shift every
// bit out (0, or -1 for a negative a with >>), later PyTorch's rule; 1.13 used the count mod 64.
Tensor bitwise_left_shift(const Tensor& a, const Tensor& b, Site site = Site::here());
Tensor bitwise_right_shift(const Tensor& a, const Tensor& b, Site site = Site::here());
Tensor bitwise_left_shift(const Tensor& a, int64_t b, Site site = Site::here());
Tensor bitwise_right_shift(const Tensor& a, int64_t b, Site site = Site::here());
// A floating number with a bitwise op is refused at compile time (PyTorch refuses it at run
// time), rather than converted to int64 without a word.
#define TG_NO_FLOAT_SCALAR(name)                                                \
  template <typename D, std::enable_if_t<std::is_floating_point_v<D>, int> = 0> \
  Tensor name(const Tensor& a, D b, Site site = Site::here()) = delete;
TG_NO_FLOAT_SCALAR(bitwise_and)
TG_NO_FLOAT_SCALAR(bitwise_or)
TG_NO_FLOAT_SCALAR(bitwise_xor)
TG_NO_FLOAT_SCALAR(bitwise_left_shift)
TG_NO_FLOAT_SCALAR(bitwise_right_shift)
#undef TG_NO_FLOAT_SCALAR

// ---- belongs in ops.hpp beside the other operators (ops/bitwise.cpp) ----
// a & b, a | b, a ^ b, ~a, a << b, a >> b: the bitwise ops above (no clash: Tensor had none of
// these, and std::ostream << Tensor keeps its own overload). Integer numbers on either side.
Tensor operator&(const Tensor& a, const Tensor& b);
Tensor operator|(const Tensor& a, const Tensor& b);
Tensor operator^(const Tensor& a, const Tensor& b);
Tensor operator<<(const Tensor& a, const Tensor& b);
Tensor operator>>(const Tensor& a, const Tensor& b);
Tensor operator&(const Tensor& a, int64_t b);
Tensor operator|(const Tensor& a, int64_t b);
Tensor operator^(const Tensor& a, int64_t b);
Tensor operator<<(const Tensor& a, int64_t b);
Tensor operator>>(const Tensor& a, int64_t b);
Tensor operator&(int64_t a, const Tensor& b);
Tensor operator|(int64_t a, const Tensor& b);
Tensor operator^(int64_t a, const Tensor& b);
Tensor operator<<(int64_t a, const Tensor& b);
Tensor operator>>(int64_t a, const Tensor& b);
Tensor operator~(const Tensor& a);
#define TG_NO_FLOAT_OPERATOR(op)                                                \
  template <typename D, std::enable_if_t<std::is_floating_point_v<D>, int> = 0> \
  Tensor operator op(const Tensor& a, D b) = delete;                            \
  template <typename D, std::enable_if_t<std::is_floating_point_v<D>, int> = 0> \
  Tensor operator op(D a, const Tensor& b) = delete;
TG_NO_FLOAT_OPERATOR(&)
TG_NO_FLOAT_OPERATOR(|)
TG_NO_FLOAT_OPERATOR(^)
TG_NO_FLOAT_OPERATOR(<<)
TG_NO_FLOAT_OPERATOR(>>)
#undef TG_NO_FLOAT_OPERATOR

}  // namespace tg
