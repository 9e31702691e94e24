// ops/index/index.hpp — PyTorch's C++ indexing, x.index({0, Slice(1, None, 2), None, Ellipsis, t})
// (its definitions: ops/index/index.cpp): TensorIndex and the index op. Part of the public API
// through ops/ops.hpp, which also declares the writes into the same places (index_put_).
#pragma once

#include "autograd/tensor.hpp"

#include <optional>
#include <string>
#include <vector>

namespace tg {

// ---- indexing: x.index({...}) (index/index.cpp) ----
// PyTorch's C++ indexing (torch::indexing): x.index({0, Slice(1, None, 2), None, Ellipsis}).
// An integer selects (the dim goes), a Slice narrows with a step, None inserts a size-1 dim,
// Ellipsis stands for the dims not named; all of these give views. Tensor indices are advanced
// indexing (a copy), NumPy's and PyTorch's rules: int64 tensors of any ndim broadcast together
// and pick elements (negative values count from the end); a bool tensor stands for its nonzero()
// positions over as many dims as it has; adjacent advanced indices put their broadcast shape
// where they stand, separated ones put it first. index_put_ writes into the same places.
namespace indexing {
struct NoneIndex {};
struct EllipsisIndex {};
inline constexpr NoneIndex None{};
inline constexpr EllipsisIndex Ellipsis{};
struct Slice {
  std::optional<int64_t> start, stop;
  int64_t step = 1;
  Slice() = default;
  Slice(std::optional<int64_t> start_, std::optional<int64_t> stop_ = std::nullopt,
        int64_t step_ = 1)
      : start(start_), stop(stop_), step(step_) {}
  Slice(std::optional<int64_t> start_, NoneIndex, int64_t step_ = 1) : start(start_), step(step_) {}
  Slice(NoneIndex, std::optional<int64_t> stop_ = std::nullopt, int64_t step_ = 1)
      : stop(stop_), step(step_) {}
  Slice(NoneIndex, NoneIndex, int64_t step_ = 1) : step(step_) {}
};
}  // namespace indexing
class TensorIndex {
 public:
  enum class Kind { Integer, Slice, None, Ellipsis, Tensor };
  TensorIndex(int64_t i) : kind_(Kind::Integer), i_(i) {}
  TensorIndex(int i) : kind_(Kind::Integer), i_(i) {}
  TensorIndex(indexing::Slice s) : kind_(Kind::Slice), slice_(s) {}
  TensorIndex(indexing::NoneIndex) : kind_(Kind::None) {}
  TensorIndex(indexing::EllipsisIndex) : kind_(Kind::Ellipsis) {}
  TensorIndex(const Tensor& t) : kind_(Kind::Tensor), t_(t) {}
  Kind kind() const { return kind_; }
  int64_t integer() const { return i_; }
  const indexing::Slice& slice() const { return slice_; }
  const Tensor& tensor() const { return t_; }
  std::string str() const;  // "0", "1:None:2", "None", "...", "tensor(3,) int64"

 private:
  Kind kind_;
  int64_t i_ = 0;
  indexing::Slice slice_;
  Tensor t_;
};
Tensor index(const Tensor& x, const std::vector<TensorIndex>& indices, Site site = Site::here());

}  // namespace tg
