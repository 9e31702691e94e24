// autograd/xtensor.hpp — opt-in interop with xtensor (include it only where you use xtensor; the
// rest of tapegrad's headers never include xtensor, so consumers on any C++ standard are safe).
//   tg::from_xarray(xt::xarray<T>)  copies into a new tensor
//   tg::as_xarray<T>(tensor)        zero-copy view (xt::adapt) over the tensor's storage; it
//                                   stays valid while the tensor (or any handle to it) lives
//   tg::to_xarray<T>(tensor)        owning copy
#pragma once

#include "autograd/tensor.hpp"

#include <xtensor/xadapt.hpp>
#include <xtensor/xarray.hpp>

#include <algorithm>
#include <vector>

namespace tg {

template <typename T>
Tensor from_xarray(const xt::xarray<T>& a) {
  Shape shape(a.shape().begin(), a.shape().end());
  Tensor t = Tensor::empty(shape, dtype_of<T>::value);
  xt::xarray<T> c = a;  // row-major copy whatever the source layout
  std::copy(c.data(), c.data() + c.size(), t.data<T>());
  return t;
}

template <typename T>
auto as_xarray(const Tensor& t) {
  std::vector<std::size_t> shape(t.shape().begin(), t.shape().end());
  return xt::adapt(t.data<T>(), static_cast<std::size_t>(t.numel()), xt::no_ownership(), shape);
}

template <typename T>
xt::xarray<T> to_xarray(const Tensor& t) {
  return xt::xarray<T>(as_xarray<T>(t));
}

}  // namespace tg
