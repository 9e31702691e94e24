// ops/core/widen.hpp — the tensor face of ops/core/cpu/reduced.hpp, for op entries whose float32
// path walks broadcasts or strides (binary ops, binary_extra): a bfloat16 / float16 operand as a
// float32 copy and a float32 result rounded once back, neither recorded (the op records its own
// node on the reduced-type tensors). Both go through Tensor::to, the one conversion path
// (autograd/convert.hpp). in_float32: a composed backward run in float32; dispatch_moves: the
// element type data movement runs a dtype by. Deliberately no kernels here. Internal to ops/.
#pragma once

#include "autograd/tape.hpp"
#include "autograd/tensor.hpp"
#include "ops/core/detail.hpp"

#include <cstdint>
#include <vector>

namespace tg::detail {

// t as float32 when it is bfloat16 or float16 (row-major), any other tensor as it is.
inline Tensor widen(const Tensor& t) {
  if (!t.defined() || !is_reduced(t.dtype())) return t;
  NoGradGuard ng;
  return t.to(kFloat32);
}
// A float32 result rounded once to dt.
inline Tensor narrow(const Tensor& f, DType dt) {
  NoGradGuard ng;
  return f.to(dt);
}

// A composed backward of reduced-type (bfloat16 / float16) values: f on float32 casts of them and
// each gradient cast back, so every gradient is rounded once (the casts are recorded under
// create_graph). Other dtypes: f on the values as they are.
template <typename F>
std::vector<Tensor> in_float32(std::vector<Tensor> v, F&& f) {
  const DType dt = v[0].dtype();
  if (!is_reduced(dt)) return f(v);
  for (Tensor& t : v) t = t.to(kFloat32);
  std::vector<Tensor> r = f(v);
  for (Tensor& t : r)
    if (t.defined()) t = t.to(dt);
  return r;
}

// Data movement (gathers, selects, triangles, adjoint scatters of distinct elements): f(T{}) with
// dispatch_all's T, and uint16_t (the bits) for bfloat16 / float16, which move unrounded.
template <typename F>
decltype(auto) dispatch_moves(DType t, const char* op, F&& f) {
  if (is_reduced(t)) return f(uint16_t{});
  return dispatch_all(t, op, f);
}

}  // namespace tg::detail
