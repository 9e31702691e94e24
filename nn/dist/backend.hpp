// nn/dist/backend.hpp — internal to nn/dist: the tensor collectives of one backend, as
// torch.distributed splits ProcessGroupMPI from ProcessGroupNCCL. MPI carries CPU tensors
// (backend_mpi.cpp), NCCL CUDA tensors (backend_nccl.cpp); each collective of dist.cpp is written
// once over this interface. A backend turns a checked collective into a task; the world runs it:
// on the communication thread after the handshake (queued), or on the calling thread once the
// handshake is done (NCCL: the device stream orders it with the kernels around it).
#pragma once

#include "nn/dist/dist.hpp"

#include <functional>
#include <string>

namespace tg::dist::detail {

using Task = std::function<void()>;

class Backend {
 public:
  virtual ~Backend() = default;
  virtual bool queued() const = 0;
  // Each returns the task that runs the collective; checks that can fail do so here, on the
  // calling thread. `what` describes the collective for error messages.
  virtual Task all_reduce(const Tensor& t, ReduceOp op, const std::string& what) = 0;
  virtual Task broadcast(const Tensor& t, int root, const std::string& what) = 0;
  virtual Task all_gather(const Tensor& out, const Tensor& in, const std::string& what) = 0;
  virtual Task reduce_scatter(const Tensor& out, const Tensor& in, ReduceOp op,
                              const std::string& what) = 0;
};

// The backend of t's device (`op` named when there is none: a build without NCCL for a CUDA
// tensor, or a communicator already bound to another device).
Backend& backend_for(const Tensor& t, const char* op);
Backend& mpi_backend();
Backend& nccl_backend(const Tensor& t, const char* op);
// Releases the NCCL communicator, if one was made (finalize).
void nccl_shutdown();

}  // namespace tg::dist::detail
