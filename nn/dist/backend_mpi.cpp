// nn/dist/backend_mpi.cpp — the MPI backend of tg::dist (backend.hpp): collectives on CPU
// tensors, run on the communication thread in issue order, in pieces of at most 2^30 elements
// (MPI counts are ints). Avg is a sum divided by the world size (MPI has no average); bool
// reduces with logical or (Sum, Max) and and (Min). Deliberately not here: start-up, the
// handshake and the objects (dist.cpp, world.cpp), CUDA tensors (backend_nccl.cpp).
#include "nn/dist/backend.hpp"
#include "nn/dist/world.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace tg::dist::detail {

namespace {
#if TG_HAVE_MPI
MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::Float32:
      return MPI_FLOAT;
    case DType::Float64:
      return MPI_DOUBLE;
    case DType::Int64:
      return MPI_INT64_T;
    case DType::Bool:
      return MPI_C_BOOL;
    case DType::BFloat16:
    case DType::Float16:
      break;  // MPI has no 16-bit float: collectives run on float32 (DDP keeps float32 grads)
  }
  throw Error(
      fmt::format("mpi: {} tensors have no MPI type; communicate them as float32", dtype_name(t)));
}
MPI_Op mpi_op(ReduceOp op, DType t) {
  if (t == DType::Bool) return op == ReduceOp::Min ? MPI_LAND : MPI_LOR;
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Avg:
      return MPI_SUM;
    case ReduceOp::Max:
      return MPI_MAX;
    case ReduceOp::Min:
      return MPI_MIN;
  }
  return MPI_SUM;
}

// Calls fn(pointer, count) over t in pieces of at most 2^30 elements.
template <typename F>
void for_chunks(const Tensor& t, F fn) {
  const int64_t n = t.numel();
  const size_t es = dtype_size(t.dtype());
  char* p = static_cast<char*>(t.data_ptr());
  for (int64_t done = 0; done < n;) {
    const int64_t c = std::min<int64_t>(n - done, int64_t(1) << 30);
    fn(p + done * es, static_cast<int>(c));
    done += c;
  }
}

// t /= world size, after a sum; floating t only (dist.cpp checks Avg's dtype).
void divide_by_world(const Tensor& t) {
  const int64_t n = t.numel();
  const int w = world().size;
  if (t.dtype() == DType::Float32) {
    float* f = t.data<float>();
    for (int64_t i = 0; i < n; ++i) f[i] /= static_cast<float>(w);
  } else {
    double* f = t.data<double>();
    for (int64_t i = 0; i < n; ++i) f[i] /= w;
  }
}
#endif

class Mpi final : public Backend {
 public:
  bool queued() const override { return true; }
#if TG_HAVE_MPI
  Task all_reduce(const Tensor& t, ReduceOp op, const std::string& what) override {
    return [t, op, what] {
      for_chunks(t, [&](char* p, int c) {
        mpi_check(MPI_Allreduce(MPI_IN_PLACE, p, c, mpi_type(t.dtype()), mpi_op(op, t.dtype()),
                                world().comm),
                  "MPI_Allreduce", what);
      });
      if (op == ReduceOp::Avg) divide_by_world(t);
    };
  }
  Task broadcast(const Tensor& t, int root, const std::string& what) override {
    return [t, root, what] {
      for_chunks(t, [&](char* p, int c) {
        mpi_check(MPI_Bcast(p, c, mpi_type(t.dtype()), root, world().comm), "MPI_Bcast", what);
      });
    };
  }
  Task all_gather(const Tensor& out, const Tensor& in, const std::string& what) override {
    const int count = count_of("all_gather", in.numel());
    return [out, in, count, what] {
      mpi_check(MPI_Allgather(in.data_ptr(), count, mpi_type(in.dtype()), out.data_ptr(), count,
                              mpi_type(in.dtype()), world().comm),
                "MPI_Allgather", what);
    };
  }
  Task reduce_scatter(const Tensor& out, const Tensor& in, ReduceOp op,
                      const std::string& what) override {
    const int count = count_of("reduce_scatter", out.numel());
    return [out, in, op, count, what] {
      mpi_check(MPI_Reduce_scatter_block(in.data_ptr(), out.data_ptr(), count, mpi_type(in.dtype()),
                                         mpi_op(op, in.dtype()), world().comm),
                "MPI_Reduce_scatter_block", what);
      if (op == ReduceOp::Avg) divide_by_world(out);
    };
  }
#else
  // Without MPI init() refuses to start, so no collective reaches these.
  Task all_reduce(const Tensor&, ReduceOp, const std::string&) override { return nullptr; }
  Task broadcast(const Tensor&, int, const std::string&) override { return nullptr; }
  Task all_gather(const Tensor&, const Tensor& in, const std::string&) override {
    count_of("all_gather", in.numel());
    return nullptr;
  }
  Task reduce_scatter(const Tensor& out, const Tensor&, ReduceOp, const std::string&) override {
    count_of("reduce_scatter", out.numel());
    return nullptr;
  }
#endif
};
}  // namespace

Backend& mpi_backend() {
  static Mpi b;
  return b;
}

}  // namespace tg::dist::detail
