// nn/dist/backend_nccl.cpp — the NCCL backend of tg::dist (backend.hpp): collectives on CUDA
// tensors through cuda/nccl.hpp, on the calling thread once the handshake is done, issued on the
// device's stream so they are ordered with the kernels before and after them. The communicator
// is made at the first CUDA collective, bootstrapped over MPI (rank 0's unique id broadcast as an
// object), bound to that tensor's device. The one nn/ file that calls cuda/ (its errors become
// tg::Error through autograd/cuda_call.hpp). Deliberately not here: CPU tensors (backend_mpi.cpp).
#include "autograd/cuda_call.hpp"
#include "cuda/nccl.hpp"
#include "nn/dist/backend.hpp"
#include "nn/dist/world.hpp"

#include <fmt/format.h>

namespace tg::dist::detail {

namespace {
int nccl_op(ReduceOp op) { return static_cast<int>(op); }  // cuda/nccl.hpp numbers them alike
int nccl_dtype(const Tensor& t) { return static_cast<int>(t.dtype()); }

class Nccl final : public Backend {
 public:
  void* comm = nullptr;
  int device = -1;

  bool queued() const override { return false; }
  Task all_reduce(const Tensor& t, ReduceOp op, const std::string& what) override {
    return run(what, [=] {
      tg::cuda::nccl::all_reduce(comm, t.data_ptr(), t.numel(), nccl_dtype(t), nccl_op(op));
    });
  }
  Task broadcast(const Tensor& t, int root, const std::string& what) override {
    return run(what, [=] {
      tg::cuda::nccl::broadcast(comm, t.data_ptr(), t.numel(), nccl_dtype(t), root);
    });
  }
  Task all_gather(const Tensor& out, const Tensor& in, const std::string& what) override {
    return run(what, [=] {
      tg::cuda::nccl::all_gather(comm, in.data_ptr(), out.data_ptr(), in.numel(), nccl_dtype(in));
    });
  }
  Task reduce_scatter(const Tensor& out, const Tensor& in, ReduceOp op,
                      const std::string& what) override {
    return run(what, [=] {
      tg::cuda::nccl::reduce_scatter(comm, in.data_ptr(), out.data_ptr(), out.numel(),
                                     nccl_dtype(in), nccl_op(op));
    });
  }

 private:
  template <typename F>
  static Task run(const std::string& what, F f) {
    return [what, f] { tg::detail::cuda_call(what.c_str(), f); };
  }
};
Nccl& nccl() {
  static Nccl b;
  return b;
}
}  // namespace

Backend& nccl_backend(const Tensor& t, const char* op) {
  Nccl& b = nccl();
  if (!built_with_nccl())
    fail(
        fmt::format("{}: tensor {} is on {} but this build has no NCCL (rebuild with the CUDA "
                    "toolkit's NCCL: nccl.h and libnccl)",
                    op, shape_str(t.shape()), t.device().str()));
  if (b.comm) {
    if (t.device().index != b.device)
      fail(fmt::format("{}: tensor on {} but this rank's NCCL communicator is on cuda:{}", op,
                       t.device().str(), b.device));
    return b;
  }
  // Bootstrap: rank 0's unique id to every rank over MPI.
  World& w = world();
  std::string id = w.rank == 0
                       ? tg::detail::cuda_call(op, [] { return tg::cuda::nccl::unique_id(); })
                       : std::string();
  id = broadcast_object(id, 0);
  b.device = t.device().index;
  b.comm =
      tg::detail::cuda_call(op, [&] { return tg::cuda::nccl::init(id, w.size, w.rank, b.device); });
  return b;
}

void nccl_shutdown() {
  Nccl& b = nccl();
  if (!b.comm) return;
  try {
    tg::cuda::nccl::destroy(b.comm);
  } catch (...) {
  }
  b.comm = nullptr;
}

Backend& backend_for(const Tensor& t, const char* op) {
  return t.is_cuda() ? nccl_backend(t, op) : mpi_backend();
}

}  // namespace tg::dist::detail

namespace tg::dist {
bool built_with_nccl() { return tg::cuda::nccl::built(); }
}  // namespace tg::dist
