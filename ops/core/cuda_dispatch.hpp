// ops/core/cuda_dispatch.hpp — internal (not installed): the pieces the CUDA branches of the ops share.
// Each op checks its arguments as on the CPU, then, when its inputs live on a CUDA device, makes
// its kernel calls through kernels(op, x) (ops/core/kernels.hpp, which selects the device and converts
// errors); these build the strided descriptors those calls take. via_cpu is the one fallback for
// an op whose family has no CUDA kernels yet (the list is in docs/cpu-kernels.md).
// Deliberately no kernels and no cuda/ include here.
#pragma once

#include "autograd/tensor.hpp"
#include "ops/ops.hpp"
#include "ops/core/kernels.hpp"

#include <fmt/format.h>

#include <initializer_list>
#include <type_traits>
#include <utility>

namespace tg::detail {

// Every tensor argument of one op lives on one device: the error names the op and both.
inline void check_same_device(const Tensor& a, const Tensor& b, const char* op, const char* an,
                              const char* bn) {
  if (a.defined() && b.defined() && a.device() != b.device())
    throw Error(fmt::format("{}: {} {} is on {} but {} {} is on {}; move one with .to()", op, an,
                            shape_str(a.shape()), a.device().str(), bn, shape_str(b.shape()),
                            b.device().str()));
}

// A Strided over `out` (contiguous) with up to two more operands broadcast to it.
kern::Strided make_strided(const Shape& out, std::initializer_list<const Shape*> operands);
// Operand k's strides and offset set to a tensor viewed with `strides` (elements) from `offset`.
void set_operand(kern::Strided& st, int k, const Shape& strides, int64_t offset);

// ---- the CPU fallback of ops without CUDA kernels ----
// op(args...) run on the CPU, with every tensor argument on a CUDA device copied there by the
// differentiable .cpu(), and its results copied back to `device` by .to(device): gradients flow
// back through both copies, and the op's checks and errors are the CPU's, word for word.
namespace fallback {
inline Tensor host(const Tensor& t) { return t.defined() && on_cuda(t) ? t.cpu() : t; }
template <typename A, typename = std::enable_if_t<!std::is_same_v<std::decay_t<A>, Tensor>>>
decltype(auto) host(A&& a) {
  return std::forward<A>(a);
}
inline Tensor back(Tensor t, Device d) { return t.to(d); }
inline ValuesIndices back(ValuesIndices r, Device d) { return {r.values.to(d), r.indices.to(d)}; }
}  // namespace fallback
template <typename R, typename... P, typename... A>
R via_cpu(Device device, R (*op)(P...), A&&... args) {
  return fallback::back(op(fallback::host(std::forward<A>(args))...), device);
}

}  // namespace tg::detail
