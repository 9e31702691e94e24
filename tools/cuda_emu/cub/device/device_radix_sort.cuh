// tools/cuda_emu/cub/device/device_radix_sort.cuh — cub::DeviceRadixSort::SortPairs / SortKeys
// for TG_CUDA_EMU: a stable sort on the host by the key bits [begin_bit, end_bit) (unsigned
// integer keys, as CUB's radix order for them), with CUB's two-call protocol: a first call with
// d_temp_storage == nullptr only sets temp_storage_bytes; the second must pass at least that
// many bytes of device memory (else cudaErrorInvalidValue). Keys out are the whole keys.
// Deliberately not modelled: signed and floating keys (CUB's bit twiddling), DoubleBuffer
// overloads, descending and segmented sorts.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace cub {

struct DeviceRadixSort {
  template <typename K, typename V, typename N>
  static cudaError_t SortPairs(void* d_temp_storage, size_t& temp_storage_bytes, const K* keys_in,
                               K* keys_out, const V* values_in, V* values_out, N num_items,
                               int begin_bit = 0, int end_bit = sizeof(K) * 8,
                               cudaStream_t stream = 0) {
    return sort<K, V>(d_temp_storage, temp_storage_bytes, keys_in, keys_out, values_in, values_out,
                      static_cast<int64_t>(num_items), begin_bit, end_bit, stream);
  }
  template <typename K, typename N>
  static cudaError_t SortKeys(void* d_temp_storage, size_t& temp_storage_bytes, const K* keys_in,
                              K* keys_out, N num_items, int begin_bit = 0,
                              int end_bit = sizeof(K) * 8, cudaStream_t stream = 0) {
    return sort<K, char>(d_temp_storage, temp_storage_bytes, keys_in, keys_out, nullptr, nullptr,
                         static_cast<int64_t>(num_items), begin_bit, end_bit, stream);
  }

 private:
  template <typename K, typename V>
  static cudaError_t sort(void* temp, size_t& temp_bytes, const K* keys_in, K* keys_out,
                          const V* values_in, V* values_out, int64_t n, int begin_bit, int end_bit,
                          cudaStream_t) {
    static_assert(std::is_integral_v<K> && std::is_unsigned_v<K>,
                  "the emulated radix sort takes unsigned integer keys");
    const size_t need = static_cast<size_t>(n > 0 ? n : 0) * (sizeof(K) + sizeof(V)) + 256;
    if (!temp) {
      temp_bytes = need;
      return cudaSuccess;
    }
    if (n < 0 || begin_bit < 0 || end_bit > int(sizeof(K) * 8) || begin_bit > end_bit)
      return tg_emu::fail(cudaErrorInvalidValue, "cub::DeviceRadixSort: bad size or bit range");
    if (temp_bytes < need ||
        !tg_emu::check_operand(temp, need, true, "cub::DeviceRadixSort", "temp storage"))
      return tg_emu::fail(cudaErrorInvalidValue,
                          "cub::DeviceRadixSort: temp storage smaller than the first call asked");
    const size_t nk = size_t(n) * sizeof(K), nv = size_t(n) * sizeof(V);
    if (!tg_emu::check_operand(keys_in, nk, true, "cub::DeviceRadixSort", "keys_in") ||
        !tg_emu::check_operand(keys_out, nk, true, "cub::DeviceRadixSort", "keys_out") ||
        (values_in &&
         !tg_emu::check_operand(values_in, nv, true, "cub::DeviceRadixSort", "values_in")) ||
        (values_out &&
         !tg_emu::check_operand(values_out, nv, true, "cub::DeviceRadixSort", "values_out")))
      return tg_emu::fail(cudaErrorInvalidValue);
    if (n == 0) return cudaSuccess;
    tg_emu::DeviceScope open;
    const int bits = end_bit - begin_bit;
    const K mask = bits >= int(sizeof(K) * 8) ? K(~K(0)) : K((K(1) << bits) - 1);
    auto digit = [&](K k) { return K(k >> begin_bit) & mask; };
    std::vector<int64_t> order(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) order[size_t(i)] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return digit(keys_in[a]) < digit(keys_in[b]); });
    std::vector<K> k(static_cast<size_t>(n));
    std::vector<V> v(values_in ? size_t(n) : 0);
    for (int64_t i = 0; i < n; ++i) {
      k[size_t(i)] = keys_in[order[size_t(i)]];
      if (values_in) v[size_t(i)] = values_in[order[size_t(i)]];
    }
    std::copy(k.begin(), k.end(), keys_out);
    if (values_in) std::copy(v.begin(), v.end(), values_out);
    return cudaSuccess;
  }
};

}  // namespace cub
