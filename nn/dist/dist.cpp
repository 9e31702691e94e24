// nn/dist/dist.cpp — the public face of tg::dist (dist.hpp): MPI start-up and shutdown, abort,
// and each collective written once: checks → signature → the backend of the tensor's device
// (backend.hpp: MPI for CPU tensors, NCCL for CUDA ones) → run after the handshake. The objects
// (bytes) always travel over MPI. Deliberately not here: the communication thread and the
// handshake (world.cpp), the backends' calls (backend_mpi.cpp, backend_nccl.cpp).
#include "nn/dist/dist.hpp"

#include "autograd/tape.hpp"
#include "nn/dist/backend.hpp"
#include "nn/dist/world.hpp"
#include "ops/ops.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>

namespace tg::dist {

using detail::Backend;
using detail::count_of;
using detail::fail;
using detail::require_init;
using detail::Signature;
using detail::World;
using detail::world;

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return "sum";
    case ReduceOp::Avg:
      return "avg";
    case ReduceOp::Max:
      return "max";
    case ReduceOp::Min:
      return "min";
  }
  return "?";
}

bool built_with_mpi() { return TG_HAVE_MPI != 0; }
// Read once, before init() can change the answer: MPI_Init in a plain process (a singleton)
// sets PMIX_RANK and friends in the process's own environment.
bool launched_by_mpirun() {
  static const bool launched =
      std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMIX_RANK") || std::getenv("PMI_RANK");
  return launched;
}

namespace {
void check_tensor(const char* op, const Tensor& t, const char* name = "tensor") {
  if (!t.defined()) fail(fmt::format("{}: the {} is undefined", op, name));
  if (t.requires_grad() && !t.is_leaf() && grad_enabled())
    fail(
        fmt::format("{}: {} {} is part of a graph; collectives are not differentiable (pass "
                    "a detached tensor)",
                    op, name, shape_str(t.shape())));
}
// The backends send and receive row-major memory from data_ptr(). The synchronous in-place
// collectives (all_reduce, broadcast) take a strided tensor through a row-major copy written back
// through its strides; the asynchronous ones refuse it (a copy-back would outlive the call).
void check_dense(const char* op, const Tensor& t, const char* name = "tensor") {
  if (t.defined() && !t.is_contiguous())
    fail(
        fmt::format("{}: the {} {} is a strided view (strides {}); pass a contiguous tensor "
                    "(contiguous()), or use the synchronous all_reduce or broadcast",
                    op, name, shape_str(t.shape()), shape_str(t.strides())));
}
template <typename F>
void through_dense(Tensor& t, F collective) {
  Tensor d = tg::detail::dense_copy(t.detach());
  collective(d);
  NoGradGuard ng;
  t.detach().copy_(d);
}
void check_avg(const char* op, ReduceOp r, const Tensor& t) {
  if (r == ReduceOp::Avg && !is_floating(t.dtype()))
    fail(fmt::format("{}: avg needs a floating tensor, got {} {}", op, dtype_name(t.dtype()),
                     shape_str(t.shape())));
}
// Runs a backend's task: queued backends on the communication thread after the handshake, the
// others on this thread once the handshake (itself queued) has completed.
Work run(const Backend& b, Signature sig, detail::Task task) {
  if (b.queued()) return detail::submit(std::move(sig), std::move(task));
  detail::submit(std::move(sig), nullptr).wait();
  if (task) task();
  return Work();
}
}  // namespace

// ---- start-up and shutdown ----
void init(const InitOptions& opts) {
  World& w = world();
  if (w.initialized) return;
  (void)launched_by_mpirun();  // read before MPI_Init adds to the environment
  if (w.finalized) fail("dist::init: tg::dist was already finalized in this process");
#if TG_HAVE_MPI
  const char* env_timeout = std::getenv("TG_DIST_TIMEOUT");
  w.timeout_s = opts.timeout_s > 0 ? opts.timeout_s : env_timeout ? std::atof(env_timeout) : 300.0;
  if (!(w.timeout_s > 0))
    fail(fmt::format("dist::init: timeout must be > 0 s, got {} (TG_DIST_TIMEOUT)", w.timeout_s));
  const char* env_check = std::getenv("TG_DIST_CHECK");
  w.check = opts.check >= 0 ? opts.check != 0 : !(env_check && std::string(env_check) == "0");
  int already = 0;
  MPI_Initialized(&already);
  int provided = 0;
  if (!already) {
    int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
    if (rc != MPI_SUCCESS) fail("dist::init: MPI_Init_thread failed");
    w.we_initialized_mpi = true;
  } else {
    MPI_Query_thread(&provided);
  }
  if (provided < MPI_THREAD_SERIALIZED)
    fail(
        fmt::format("dist::init: MPI gives thread level {}; the communication thread needs "
                    "MPI_THREAD_SERIALIZED or more",
                    provided));
  MPI_Comm_dup(MPI_COMM_WORLD, &w.comm);
  MPI_Comm_set_errhandler(w.comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(w.comm, &w.rank);
  MPI_Comm_size(w.comm, &w.size);
  MPI_Comm local;
  MPI_Comm_split_type(w.comm, MPI_COMM_TYPE_SHARED, w.rank, MPI_INFO_NULL, &local);
  MPI_Comm_rank(local, &w.local_rank);
  MPI_Comm_size(local, &w.local_size);
  MPI_Comm_free(&local);
  w.initialized = true;
  w.thread = std::thread(detail::comm_loop);
  detail::install_exit_handlers();
#else
  (void)opts;
  fail(
      "dist::init: this build of tapegrad has no MPI; install Debian's Open MPI (apt-get install "
      "libopenmpi-dev openmpi-bin, or bash tools/setup.sh) and rebuild");
#endif
}

bool is_initialized() { return world().initialized && !world().finalized; }
int rank() { return world().rank; }
int world_size() { return world().size; }
int local_rank() { return world().local_rank; }
int local_world_size() { return world().local_size; }

void finalize() {
  World& w = world();
  if (!w.initialized || w.finalized) return;
  {
    std::unique_lock<std::mutex> lk(w.mu);
    w.stop = true;
    w.cv.notify_all();
    // A collective still running at exit means another rank never joined it: give it the
    // timeout, then stop every rank instead of hanging.
    const auto limit = std::chrono::duration<double>(w.timeout_s);
    if (!w.done_cv.wait_for(lk, limit, [&] { return w.thread_done; })) {
      lk.unlock();
      abort("exiting with a collective still in flight (another rank stopped joining them)", 1);
    }
  }
  w.thread.join();
  detail::nccl_shutdown();
#if TG_HAVE_MPI
  MPI_Comm_free(&w.comm);
  if (w.we_initialized_mpi) MPI_Finalize();
#endif
  w.finalized = true;
}

void abort(const std::string& message, int code) {
  World& w = world();
  std::fprintf(stderr, "tapegrad dist: rank %d of %d: %s\n", w.rank, w.size, message.c_str());
  std::fflush(stderr);
#if TG_HAVE_MPI
  if (w.initialized && !w.finalized && w.size > 1) MPI_Abort(MPI_COMM_WORLD, code);
#endif
  std::_Exit(code);
}

// ---- collectives ----
Work all_reduce_async(Tensor t, ReduceOp op) {
  const char* name = "all_reduce";
  require_init(name);
  check_tensor(name, t);
  check_dense(name, t);
  check_avg(name, op, t);
  Signature sig = detail::signature(detail::kAllReduce, t, static_cast<int64_t>(op),
                                    detail::describe(name, t, reduce_op_name(op)));
  Backend& b = detail::backend_for(t, name);
  detail::Task task = b.all_reduce(t, op, sig.what);
  return run(b, std::move(sig), std::move(task));
}
void all_reduce(Tensor& t, ReduceOp op) {
  if (t.defined() && !t.is_contiguous())
    return through_dense(t, [op](Tensor& d) { all_reduce(d, op); });
  all_reduce_async(t, op).wait();
}

void broadcast(Tensor& t, int root) {
  const char* name = "broadcast";
  require_init(name);
  check_tensor(name, t);
  if (!t.is_contiguous()) return through_dense(t, [root](Tensor& d) { broadcast(d, root); });
  World& w = world();
  if (root < 0 || root >= w.size)
    fail(fmt::format("broadcast: root {} is not a rank (world size {})", root, w.size));
  Signature sig = detail::signature(detail::kBroadcast, t, root,
                                    detail::describe(name, t, fmt::format("root {}", root)));
  Backend& b = detail::backend_for(t, name);
  detail::Task task = b.broadcast(t, root, sig.what);
  run(b, std::move(sig), std::move(task)).wait();
}

Work all_gather_into_tensor_async(Tensor out, Tensor in) {
  const char* name = "all_gather";
  require_init(name);
  check_tensor(name, in, "input");
  check_tensor(name, out, "output");
  check_dense(name, in, "input");
  check_dense(name, out, "output");
  World& w = world();
  if (out.dtype() != in.dtype() || out.numel() != in.numel() * w.size ||
      out.device() != in.device())
    fail(fmt::format("all_gather: output {} {} must hold {} inputs {} {} (world size {})",
                     dtype_name(out.dtype()), shape_str(out.shape()), w.size,
                     dtype_name(in.dtype()), shape_str(in.shape()), w.size));
  Signature sig = detail::signature(detail::kAllGather, in, 0, detail::describe(name, in));
  Backend& b = detail::backend_for(in, name);
  detail::Task task = b.all_gather(out, in, sig.what);
  return run(b, std::move(sig), std::move(task));
}
void all_gather_into_tensor(Tensor& out, const Tensor& in) {
  all_gather_into_tensor_async(out, in).wait();
}
std::vector<Tensor> all_gather(const Tensor& t) {
  require_init("all_gather");
  check_tensor("all_gather", t);
  World& w = world();
  Tensor flat = Tensor::empty({w.size * t.numel()}, t.dtype(), t.device());
  all_gather_into_tensor(flat, tg::detail::dense(t.detach()));
  std::vector<Tensor> out;
  for (int r = 0; r < w.size; ++r) {
    NoGradGuard ng;
    out.push_back(flat.narrow(0, r * t.numel(), t.numel()).reshape(t.shape()).clone());
  }
  return out;
}

Work reduce_scatter_tensor_async(Tensor out, Tensor in, ReduceOp op) {
  const char* name = "reduce_scatter";
  require_init(name);
  check_tensor(name, in, "input");
  check_tensor(name, out, "output");
  check_dense(name, in, "input");
  check_dense(name, out, "output");
  World& w = world();
  if (out.dtype() != in.dtype() || in.numel() != out.numel() * w.size ||
      out.device() != in.device())
    fail(fmt::format("reduce_scatter: input {} {} must hold {} outputs {} {} (world size {})",
                     dtype_name(in.dtype()), shape_str(in.shape()), w.size, dtype_name(out.dtype()),
                     shape_str(out.shape()), w.size));
  check_avg(name, op, in);
  Signature sig = detail::signature(detail::kReduceScatter, in, static_cast<int64_t>(op),
                                    detail::describe(name, in, reduce_op_name(op)));
  Backend& b = detail::backend_for(in, name);
  detail::Task task = b.reduce_scatter(out, in, op, sig.what);
  return run(b, std::move(sig), std::move(task));
}
void reduce_scatter_tensor(Tensor& out, const Tensor& in, ReduceOp op) {
  reduce_scatter_tensor_async(out, in, op).wait();
}

void barrier() {
  require_init("barrier");
  Signature s = detail::signature(detail::kBarrier, 0, "barrier");
#if TG_HAVE_MPI
  detail::submit(s, [] {
    detail::mpi_check(MPI_Barrier(world().comm), "MPI_Barrier", "barrier");
  }).wait();
#endif
}

// ---- objects: over MPI, on the communication thread ----
std::vector<std::string> all_gather_object(const std::string& bytes) {
  require_init("all_gather_object");
  Signature s = detail::signature(detail::kObject, 0, "all_gather_object");
  std::vector<std::string> out;
#if TG_HAVE_MPI
  detail::submit(s, [&] {
    World& w = world();
    std::vector<int> lens(static_cast<size_t>(w.size)), displs(static_cast<size_t>(w.size));
    int mine = count_of("all_gather_object", static_cast<int64_t>(bytes.size()));
    detail::mpi_check(MPI_Allgather(&mine, 1, MPI_INT, lens.data(), 1, MPI_INT, w.comm),
                      "MPI_Allgather", s.what);
    int64_t total = 0;
    for (int r = 0; r < w.size; ++r) {
      displs[r] = static_cast<int>(total);
      total += lens[r];
    }
    count_of("all_gather_object", total);
    std::string all(static_cast<size_t>(total), '\0');
    detail::mpi_check(MPI_Allgatherv(bytes.data(), mine, MPI_CHAR, all.data(), lens.data(),
                                     displs.data(), MPI_CHAR, w.comm),
                      "MPI_Allgatherv", s.what);
    for (int r = 0; r < w.size; ++r) out.push_back(all.substr(displs[r], lens[r]));
  }).wait();
#endif
  return out;
}

std::string broadcast_object(const std::string& bytes, int root) {
  require_init("broadcast_object");
  Signature s =
      detail::signature(detail::kObject, root, fmt::format("broadcast_object(root {})", root));
  std::string out = bytes;
#if TG_HAVE_MPI
  detail::submit(s, [&] {
    World& w = world();
    int64_t n = static_cast<int64_t>(out.size());
    detail::mpi_check(MPI_Bcast(&n, 1, MPI_INT64_T, root, w.comm), "MPI_Bcast", s.what);
    out.resize(static_cast<size_t>(n));
    detail::mpi_check(
        MPI_Bcast(out.data(), count_of("broadcast_object", n), MPI_CHAR, root, w.comm), "MPI_Bcast",
        s.what);
  }).wait();
#endif
  return out;
}

}  // namespace tg::dist
