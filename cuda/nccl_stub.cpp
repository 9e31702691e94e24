// cuda/nccl_stub.cpp — cuda/nccl.hpp for builds without NCCL: built() is false, calls throw.
#include "cuda/nccl.hpp"

#include "cuda/runtime.cuh"

namespace tg::cuda::nccl {
namespace {
[[noreturn]] void none() {
  throw Error(
      "NCCL: this build of tapegrad has no NCCL (it needs the CUDA toolkit's nccl.h and "
      "libnccl at configure time)");
}
}  // namespace
bool built() { return false; }
std::string unique_id() { none(); }
void* init(const std::string&, int, int, int) { none(); }
void destroy(void*) {}
void all_reduce(void*, void*, int64_t, int, int) { none(); }
void broadcast(void*, void*, int64_t, int, int) { none(); }
void all_gather(void*, const void*, void*, int64_t, int) { none(); }
void reduce_scatter(void*, const void*, void*, int64_t, int, int) { none(); }
}  // namespace tg::cuda::nccl
