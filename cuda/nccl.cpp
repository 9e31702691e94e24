// cuda/nccl.cpp — cuda/nccl.hpp over the CUDA toolkit's NCCL (built when nccl.h and libnccl are
// found). Bool travels as uint8 (sum/max: or, min: and); avg is NCCL's own ncclAvg.
#include "cuda/nccl.hpp"

#include "cuda/runtime.cuh"

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstring>
#include <string>

namespace tg::cuda::nccl {
namespace {
void check(ncclResult_t r, const char* call) {
  if (r == ncclSuccess) return;
  throw Error(std::string(current_op()) + ": " + call + " failed: " + ncclGetErrorString(r));
}
ncclDataType_t type_of(int dt) {
  switch (dt) {
    case 0:
      return ncclFloat32;
    case 1:
      return ncclFloat64;
    case 2:
      return ncclInt64;
    default:
      return ncclUint8;
  }
}
ncclRedOp_t op_of(int op, int dt) {
  if (dt == 3) return op == 3 ? ncclMin : ncclMax;
  switch (op) {
    case 1:
      return ncclAvg;
    case 2:
      return ncclMax;
    case 3:
      return ncclMin;
    default:
      return ncclSum;
  }
}
cudaStream_t stream_now() { return static_cast<cudaStream_t>(tg::cuda::stream()); }
}  // namespace

bool built() { return true; }
std::string unique_id() {
  ncclUniqueId id;
  check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  return std::string(id.internal, sizeof(id.internal));
}
void* init(const std::string& id_bytes, int world, int rank, int device) {
  ncclUniqueId id;
  if (id_bytes.size() != sizeof(id.internal))
    throw Error("NCCL: unique id of " + std::to_string(id_bytes.size()) + " bytes, expected " +
                std::to_string(sizeof(id.internal)));
  std::memcpy(id.internal, id_bytes.data(), sizeof(id.internal));
  set_device(device);
  ncclComm_t comm;
  check(ncclCommInitRank(&comm, world, id, rank), "ncclCommInitRank");
  return comm;
}
void destroy(void* comm) {
  if (comm) ncclCommDestroy(static_cast<ncclComm_t>(comm));
}
void all_reduce(void* comm, void* buf, int64_t n, int dt, int op) {
  check(ncclAllReduce(buf, buf, static_cast<size_t>(n), type_of(dt), op_of(op, dt),
                      static_cast<ncclComm_t>(comm), stream_now()),
        "ncclAllReduce");
}
void broadcast(void* comm, void* buf, int64_t n, int dt, int root) {
  check(ncclBroadcast(buf, buf, static_cast<size_t>(n), type_of(dt), root,
                      static_cast<ncclComm_t>(comm), stream_now()),
        "ncclBroadcast");
}
void all_gather(void* comm, const void* in, void* out, int64_t n_in, int dt) {
  check(ncclAllGather(in, out, static_cast<size_t>(n_in), type_of(dt),
                      static_cast<ncclComm_t>(comm), stream_now()),
        "ncclAllGather");
}
void reduce_scatter(void* comm, const void* in, void* out, int64_t n_out, int dt, int op) {
  check(ncclReduceScatter(in, out, static_cast<size_t>(n_out), type_of(dt), op_of(op, dt),
                          static_cast<ncclComm_t>(comm), stream_now()),
        "ncclReduceScatter");
}
}  // namespace tg::cuda::nccl
