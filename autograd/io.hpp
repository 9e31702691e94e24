// autograd/io.hpp — NumPy .npy files (load/save, via xtensor's xnpy in autograd/npy.cpp).
// Saving is atomic: a temporary file is written, flushed and renamed over the target, so a run
// killed mid-write never leaves a half-written file.
#pragma once

#include "autograd/tensor.hpp"

#include <string>

namespace tg {

// Loads C-order arrays of every dtype xtensor's xnpy reads: float32/float64, bool, and signed or
// unsigned integers of 1, 2, 4 or 8 bytes (uint8/uint16/int32 token files...), which load as
// int64 (a uint64 above INT64_MAX is refused); either byte order. Other dtypes (float16,
// complex, strings) and Fortran order are refused with the file and dtype named.
Tensor load_npy(const std::string& path);
void save_npy(const std::string& path, const Tensor& t);

// Writes bytes to path atomically (tmp file + fsync + rename). Shared by every file writer.
void write_file_atomic(const std::string& path, const std::string& bytes);

}  // namespace tg
