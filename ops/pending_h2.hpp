// ops/pending_h2.hpp — declarations added by issue 40's h2 branch (advanced indexing, index_put
// with accumulate, scatter with a value, in-place scatter), kept out of ops/ops.hpp until the
// merge so that adding them rebuilds only the files that use them. Each says where it belongs.
#pragma once

#include "ops/ops.hpp"

#include <functional>
#include <initializer_list>

namespace tg {

// ---- belongs in ops.hpp, "indexing: x.index({...}) (index.cpp)", after index_put_ ----
// PyTorch's index_put_(indices, values, accumulate): values broadcast to the indexed shape;
// accumulate adds (a repeated position gets the sum of its values), else each position takes
// its last write in index order (PyTorch's CPU order; only that write gets a gradient).
// Tensor::index_put_(indices, values, accumulate) belongs in autograd/tensor.hpp beside the
// two existing methods.
Tensor index_put_(const Tensor& x, const std::vector<TensorIndex>& indices, const Tensor& values,
                  bool accumulate, Site site = Site::here());
// Out-of-place (torch.index_put): x with the writes above, x itself unchanged.
Tensor index_put(const Tensor& x, const std::vector<TensorIndex>& indices, const Tensor& values,
                 bool accumulate = false, Site site = Site::here());

// ---- belongs in ops.hpp, "scatter.cpp" block after scatter() ----
// scatter with one value at every index position (the one-hot idiom
// zeros({N, C}).scatter(1, labels, 1.0)); dx is g with the written places zeroed.
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, double value,
               Site site = Site::here());
// In-place scatter (x.scatter_(dim, index, src / value) in PyTorch), under the in-place rules of
// ops.hpp's "in-place writes". Tensor::scatter_ methods belong in autograd/tensor.hpp.
Tensor scatter_(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                Site site = Site::here());
Tensor scatter_(const Tensor& x, int64_t dim, const Tensor& index, double value,
                Site site = Site::here());

namespace detail {
// ---- belongs in ops/detail.hpp (the in-place machinery of ops/inplace.cpp, for ops of other
// families that write in place) ----
// Writes compute(x's values) into x as `op`, with every in-place check and the autograd
// rebase (recorded: compute gets a clone of x and must return x's shape).
Tensor inplace_update(const char* op, const Tensor& x, std::initializer_list<const Tensor*> others,
                      const std::function<Tensor(const Tensor&)>& compute);
// copy_(x, src) named `op` in its errors.
Tensor copy_named(const char* op, const Tensor& x, const Tensor& src);
// Does some memory location hold more than one element of a view of this shape and strides?
bool has_internal_overlap(const Shape& shape, const Shape& strides);
}  // namespace detail

}  // namespace tg
