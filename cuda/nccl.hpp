// cuda/nccl.hpp — the plain C++ face of NCCL for tg::dist (nn/dist): a communicator made from a
// unique id that MPI carries, and the four collectives on device buffers, issued on the device's
// one stream (cuda/runtime.cuh), so they are ordered with every kernel before and after them.
// No NCCL or CUDA headers here. cuda/nccl.cpp implements it where the CUDA toolkit ships NCCL;
// cuda/nccl_stub.cpp everywhere else (built() is false and every call throws tg::cuda::Error).
#pragma once

#include <cstdint>
#include <string>

namespace tg::cuda::nccl {

bool built();             // this build links NCCL
std::string unique_id();  // ncclGetUniqueId's 128 bytes (rank 0 makes it)
// ncclCommInitRank on device `device`; returns the communicator (opaque).
void* init(const std::string& id, int world, int rank, int device);
void destroy(void* comm);
// dt: tg::DType numbering (0 f32, 1 f64, 2 i64, 3 bool); op: tg::dist::ReduceOp numbering
// (0 sum, 1 avg, 2 max, 3 min). n counts elements.
void all_reduce(void* comm, void* buf, int64_t n, int dt, int op);
void broadcast(void* comm, void* buf, int64_t n, int dt, int root);
void all_gather(void* comm, const void* in, void* out, int64_t n_in, int dt);
void reduce_scatter(void* comm, const void* in, void* out, int64_t n_out, int dt, int op);

}  // namespace tg::cuda::nccl
