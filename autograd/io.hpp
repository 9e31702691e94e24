// autograd/io.hpp — NumPy .npy files (load/save, via xtensor's xnpy in autograd/npy.cpp).
// Saving is atomic: a temporary file is written, flushed and renamed over the target, so a run
// killed mid-write never leaves a half-written file.
#pragma once

#include "autograd/tensor.hpp"

#include <string>

namespace tg {

// Loads float32, float64, int64 and bool arrays (C order, little endian).
Tensor load_npy(const std::string& path);
void save_npy(const std::string& path, const Tensor& t);

// Writes bytes to path atomically (tmp file + fsync + rename). Shared by every file writer.
void write_file_atomic(const std::string& path, const std::string& bytes);

}  // namespace tg
