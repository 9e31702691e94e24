// nn/dist/dist.cpp — the process group: MPI start-up, the communication thread, the handshake
// before every collective, CPU collectives over MPI and CUDA ones over NCCL (cuda/nccl.hpp).
#include "nn/dist/dist.hpp"

#include "autograd/tape.hpp"
#include "ops/ops.hpp"

#include "cuda/nccl.hpp"
#include "cuda/runtime.cuh"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

#if TG_HAVE_MPI
#include <mpi.h>
#endif

namespace tg::dist {

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
bool built_with_nccl() { return tg::cuda::nccl::built(); }
// Read once, before init() can change the answer: MPI_Init in a plain process (a singleton)
// sets PMIX_RANK and friends in the process's own environment.
bool launched_by_mpirun() {
  static const bool launched =
      std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMIX_RANK") || std::getenv("PMI_RANK");
  return launched;
}

struct Work::State {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::exception_ptr error;
  std::string what;  // "all_reduce(sum) float32 (4,3)"
};

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

enum Kind : int64_t { kAllReduce = 1, kBroadcast, kAllGather, kReduceScatter, kBarrier, kObject };
const char* kind_name(int64_t k) {
  switch (k) {
    case kAllReduce:
      return "all_reduce";
    case kBroadcast:
      return "broadcast";
    case kAllGather:
      return "all_gather";
    case kReduceScatter:
      return "reduce_scatter";
    case kBarrier:
      return "barrier";
    case kObject:
      return "object exchange";
  }
  return "?";
}

// What one rank says it is about to run; every rank must say the same.
struct Signature {
  int64_t seq = 0, kind = 0, dtype = -1, numel = 0, shape_hash = 0, arg = 0;
  std::string what;
};

struct World {
  bool initialized = false, finalized = false, we_initialized_mpi = false;
  int rank = 0, size = 1, local_rank = 0, local_size = 1;
  double timeout_s = 300;
  bool check = true;
  int64_t seq = 0;  // collectives issued by this rank (the handshake compares it)
  // The communication thread and its FIFO.
  std::thread thread;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::function<void()>> queue;
  bool stop = false, thread_done = false;
  std::condition_variable done_cv;
  // Counters.
  std::mutex stats_mu;
  Stats stats;
  void* nccl = nullptr;  // the NCCL communicator, made at the first CUDA collective
  int nccl_device = -1;
#if TG_HAVE_MPI
  MPI_Comm comm = MPI_COMM_NULL;
#endif
};
World& world() {
  static World w;
  return w;
}

[[noreturn]] void fail(const std::string& msg) { throw Error(msg); }

void require_init(const char* what) {
  World& w = world();
  if (w.finalized) fail(fmt::format("{}: tg::dist was finalized", what));
  if (!w.initialized)
    fail(fmt::format("{}: call tg::dist::init() first (run the program under mpirun -np N)", what));
}

void add_stat(double Stats::*field, double v) {
  std::lock_guard<std::mutex> lk(world().stats_mu);
  world().stats.*field += v;
}
void count_stat(int64_t Stats::*field) {
  std::lock_guard<std::mutex> lk(world().stats_mu);
  ++(world().stats.*field);
}

#if TG_HAVE_MPI
void mpi_check(int rc, const char* call, const std::string& what) {
  if (rc == MPI_SUCCESS) return;
  char buf[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, buf, &len);
  fail(fmt::format("{}: {} failed on rank {}: {}", what, call, world().rank,
                   std::string(buf, static_cast<size_t>(len))));
}
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
  }
  return MPI_BYTE;
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

// The handshake, on the communication thread: max over (sig, -sig) tells whether every rank
// sent the same numbers; if not, every rank gathers the others' descriptions and throws.
void handshake(const Signature& s) {
  World& w = world();
  count_stat(&Stats::handshakes);
  int64_t v[12] = {s.seq, s.kind, s.dtype, s.numel, s.shape_hash, s.arg};
  for (int i = 0; i < 6; ++i) v[6 + i] = -v[i];
  mpi_check(MPI_Allreduce(MPI_IN_PLACE, v, 12, MPI_INT64_T, MPI_MAX, w.comm), "MPI_Allreduce",
            fmt::format("{} handshake", kind_name(s.kind)));
  bool same = true;
  for (int i = 0; i < 6; ++i) same = same && v[i] == -v[6 + i];
  if (same) return;
  constexpr int kLen = 160;
  char mine[kLen] = {};
  std::snprintf(mine, kLen, "#%lld %s", static_cast<long long>(s.seq), s.what.c_str());
  std::vector<char> all(static_cast<size_t>(kLen) * static_cast<size_t>(w.size));
  mpi_check(MPI_Allgather(mine, kLen, MPI_CHAR, all.data(), kLen, MPI_CHAR, w.comm),
            "MPI_Allgather", "handshake");
  std::string msg =
      fmt::format("{}: the ranks issued different collectives (shape, dtype, op or order differ):",
                  kind_name(s.kind));
  for (int r = 0; r < w.size; ++r)
    msg += fmt::format(" rank {}: {}{}", r, std::string(all.data() + r * kLen),
                       r + 1 < w.size ? ";" : "");
  fail(msg);
}
#endif

void comm_loop() {
  World& w = world();
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lk(w.mu);
      w.cv.wait(lk, [&] { return w.stop || !w.queue.empty(); });
      if (w.queue.empty()) break;  // stop requested and nothing left
      task = std::move(w.queue.front());
      w.queue.pop_front();
    }
    task();
  }
  std::lock_guard<std::mutex> lk(w.mu);
  w.thread_done = true;
  w.done_cv.notify_all();
}

// Queues fn on the communication thread (after the handshake on sig); the Work completes when
// fn returns or throws.
Work submit(Signature sig, std::function<void()> fn) {
  World& w = world();
  auto st = std::make_shared<Work::State>();
  st->what = sig.what;
  count_stat(&Stats::collectives);
  const bool check = w.check;
  auto task = [st, sig = std::move(sig), fn = std::move(fn), check] {
    auto t0 = Clock::now();
    try {
#if TG_HAVE_MPI
      if (check) handshake(sig);
#endif
      if (fn) fn();
    } catch (...) {
      st->error = std::current_exception();
    }
    add_stat(&Stats::comm_s, seconds_since(t0));
    std::lock_guard<std::mutex> lk(st->mu);
    st->done = true;
    st->cv.notify_all();
  };
  {
    std::lock_guard<std::mutex> lk(w.mu);
    if (w.stop) fail(fmt::format("{}: tg::dist is shutting down", sig.what));
    w.queue.push_back(std::move(task));
  }
  w.cv.notify_one();
  return Work(st);
}

std::string describe(const char* op, const Tensor& t, const std::string& arg = "") {
  return fmt::format("{}{} {} {}{}", op, arg.empty() ? "" : "(" + arg + ")", dtype_name(t.dtype()),
                     shape_str(t.shape()), t.is_cuda() ? " on " + t.device().str() : "");
}

int64_t shape_hash(const Shape& s) {
  uint64_t h = 1469598103934665603ull;
  for (int64_t d : s) h = (h ^ static_cast<uint64_t>(d)) * 1099511628211ull;
  h = (h ^ s.size()) * 1099511628211ull;
  return static_cast<int64_t>(h >> 1);
}

Signature signature(int64_t kind, const Tensor& t, int64_t arg, const std::string& what) {
  Signature s;
  s.seq = world().seq++;
  s.kind = kind;
  s.dtype = static_cast<int64_t>(t.dtype());
  s.numel = t.numel();
  s.shape_hash = shape_hash(t.shape());
  s.arg = arg;
  s.what = what;
  return s;
}

void check_tensor(const char* op, const Tensor& t, const char* name = "tensor") {
  if (!t.defined()) fail(fmt::format("{}: the {} is undefined", op, name));
  if (t.requires_grad() && !t.is_leaf() && grad_enabled())
    fail(
        fmt::format("{}: {} {} is part of a graph; collectives are not differentiable (pass "
                    "a detached tensor)",
                    op, name, shape_str(t.shape())));
}

// Calls fn(pointer, count) over t in pieces of at most 2^30 elements (MPI counts are ints).
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

// t /= world size, after a sum (MPI has no average); floating t only (checked by the callers).
[[maybe_unused]] void divide_by_world(const Tensor& t) {
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

int count_of(const char* op, int64_t n) {
  if (n > INT_MAX)
    fail(fmt::format("{}: {} elements is more than one collective moves ({}); split the tensor", op,
                     n, INT_MAX));
  return static_cast<int>(n);
}

// ---- CUDA tensors: NCCL on the calling thread, after an MPI handshake ----
bool on_cuda(const Tensor& t) { return t.defined() && t.is_cuda(); }
void* nccl_comm(const Tensor& t, const char* op) {
  World& w = world();
  if (!built_with_nccl())
    fail(
        fmt::format("{}: tensor {} is on {} but this build has no NCCL (rebuild with the CUDA "
                    "toolkit's NCCL: nccl.h and libnccl)",
                    op, shape_str(t.shape()), t.device().str()));
  if (w.nccl) {
    if (t.device().index != w.nccl_device)
      fail(fmt::format("{}: tensor on {} but this rank's NCCL communicator is on cuda:{}", op,
                       t.device().str(), w.nccl_device));
    return w.nccl;
  }
  // Bootstrap: rank 0's unique id to every rank over MPI.
  std::string id = w.rank == 0 ? tg::cuda::nccl::unique_id() : std::string();
  id = broadcast_object(id, 0);
  w.nccl_device = t.device().index;
  w.nccl = tg::cuda::nccl::init(id, w.size, w.rank, w.nccl_device);
  return w.nccl;
}
int nccl_op(ReduceOp op) { return static_cast<int>(op); }
void cuda_handshake(Signature sig) { submit(std::move(sig), nullptr).wait(); }
void wrap_cuda(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const tg::cuda::Error& e) {
    throw Error(e.what());
  }
}

void terminate_handler() {
  std::string what = "terminate called without an active exception";
  if (std::exception_ptr e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      what = std::string("uncaught exception: ") + ex.what();
    } catch (...) {
      what = "uncaught exception of unknown type";
    }
  }
  abort(what, 1);
}

void at_exit() { finalize(); }

}  // namespace

// ---- Work ----
void Work::wait() {
  if (!state_) return;
  World& w = world();
  auto t0 = Clock::now();
  {
    std::unique_lock<std::mutex> lk(state_->mu);
    if (!state_->done) {
      const auto limit = std::chrono::duration<double>(w.timeout_s);
      if (!state_->cv.wait_for(lk, limit, [&] { return state_->done; })) {
        lk.unlock();
        abort(fmt::format("{} did not complete within {} s (TG_DIST_TIMEOUT): another rank "
                          "died, hangs, or issued a different collective",
                          state_->what, w.timeout_s),
              1);
      }
    }
  }
  add_stat(&Stats::wait_s, seconds_since(t0));
  if (state_->error) std::rethrow_exception(state_->error);
}
bool Work::completed() const {
  if (!state_) return true;
  std::lock_guard<std::mutex> lk(state_->mu);
  return state_->done;
}

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
  w.thread = std::thread(comm_loop);
  std::set_terminate(terminate_handler);
  std::atexit(at_exit);
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
  if (w.nccl) {
    try {
      tg::cuda::nccl::destroy(w.nccl);
    } catch (...) {
    }
    w.nccl = nullptr;
  }
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
  if (op == ReduceOp::Avg && !is_floating(t.dtype()))
    fail(fmt::format("all_reduce: avg needs a floating tensor, got {} {}", dtype_name(t.dtype()),
                     shape_str(t.shape())));
  Signature sig =
      signature(kAllReduce, t, static_cast<int64_t>(op), describe(name, t, reduce_op_name(op)));
  if (on_cuda(t)) {
    void* comm = nccl_comm(t, name);
    cuda_handshake(sig);
    wrap_cuda([&] {
      tg::cuda::nccl::all_reduce(comm, t.data_ptr(), t.numel(), static_cast<int>(t.dtype()),
                                 nccl_op(op));
    });
    return Work();
  }
#if TG_HAVE_MPI
  return submit(std::move(sig), [t, op, what = sig.what] {
    for_chunks(t, [&](char* p, int c) {
      mpi_check(MPI_Allreduce(MPI_IN_PLACE, p, c, mpi_type(t.dtype()), mpi_op(op, t.dtype()),
                              world().comm),
                "MPI_Allreduce", what);
    });
    if (op == ReduceOp::Avg) divide_by_world(t);
  });
#else
  return Work();
#endif
}
void all_reduce(Tensor& t, ReduceOp op) { all_reduce_async(t, op).wait(); }

void broadcast(Tensor& t, int root) {
  const char* name = "broadcast";
  require_init(name);
  check_tensor(name, t);
  World& w = world();
  if (root < 0 || root >= w.size)
    fail(fmt::format("broadcast: root {} is not a rank (world size {})", root, w.size));
  Signature sig = signature(kBroadcast, t, root, describe(name, t, fmt::format("root {}", root)));
  if (on_cuda(t)) {
    void* comm = nccl_comm(t, name);
    cuda_handshake(sig);
    wrap_cuda([&] {
      tg::cuda::nccl::broadcast(comm, t.data_ptr(), t.numel(), static_cast<int>(t.dtype()), root);
    });
    return;
  }
#if TG_HAVE_MPI
  submit(std::move(sig), [t, root, what = sig.what] {
    for_chunks(t, [&](char* p, int c) {
      mpi_check(MPI_Bcast(p, c, mpi_type(t.dtype()), root, world().comm), "MPI_Bcast", what);
    });
  }).wait();
#endif
}

Work all_gather_into_tensor_async(Tensor out, Tensor in) {
  const char* name = "all_gather";
  require_init(name);
  check_tensor(name, in, "input");
  check_tensor(name, out, "output");
  World& w = world();
  if (out.dtype() != in.dtype() || out.numel() != in.numel() * w.size ||
      out.device() != in.device())
    fail(fmt::format("all_gather: output {} {} must hold {} inputs {} {} (world size {})",
                     dtype_name(out.dtype()), shape_str(out.shape()), w.size,
                     dtype_name(in.dtype()), shape_str(in.shape()), w.size));
  Signature sig = signature(kAllGather, in, 0, describe(name, in));
  if (on_cuda(in)) {
    void* comm = nccl_comm(in, name);
    cuda_handshake(sig);
    wrap_cuda([&] {
      tg::cuda::nccl::all_gather(comm, in.data_ptr(), out.data_ptr(), in.numel(),
                                 static_cast<int>(in.dtype()));
    });
    return Work();
  }
  const int count = count_of(name, in.numel());
#if TG_HAVE_MPI
  return submit(std::move(sig), [out, in, count, what = sig.what] {
    mpi_check(MPI_Allgather(in.data_ptr(), count, mpi_type(in.dtype()), out.data_ptr(), count,
                            mpi_type(in.dtype()), world().comm),
              "MPI_Allgather", what);
  });
#else
  (void)count;
  return Work();
#endif
}
void all_gather_into_tensor(Tensor& out, const Tensor& in) {
  all_gather_into_tensor_async(out, in).wait();
}
std::vector<Tensor> all_gather(const Tensor& t) {
  require_init("all_gather");
  check_tensor("all_gather", t);
  World& w = world();
  Tensor flat = Tensor::empty({w.size * t.numel()}, t.dtype(), t.device());
  all_gather_into_tensor(flat, t);
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
  World& w = world();
  if (out.dtype() != in.dtype() || in.numel() != out.numel() * w.size ||
      out.device() != in.device())
    fail(fmt::format("reduce_scatter: input {} {} must hold {} outputs {} {} (world size {})",
                     dtype_name(in.dtype()), shape_str(in.shape()), w.size, dtype_name(out.dtype()),
                     shape_str(out.shape()), w.size));
  if (op == ReduceOp::Avg && !is_floating(in.dtype()))
    fail(fmt::format("reduce_scatter: avg needs a floating tensor, got {} {}",
                     dtype_name(in.dtype()), shape_str(in.shape())));
  Signature sig = signature(kReduceScatter, in, static_cast<int64_t>(op),
                            describe(name, in, reduce_op_name(op)));
  if (on_cuda(in)) {
    void* comm = nccl_comm(in, name);
    cuda_handshake(sig);
    wrap_cuda([&] {
      tg::cuda::nccl::reduce_scatter(comm, in.data_ptr(), out.data_ptr(), out.numel(),
                                     static_cast<int>(in.dtype()), nccl_op(op));
    });
    return Work();
  }
  const int count = count_of(name, out.numel());
#if TG_HAVE_MPI
  return submit(std::move(sig), [out, in, op, count, what = sig.what] {
    mpi_check(MPI_Reduce_scatter_block(in.data_ptr(), out.data_ptr(), count, mpi_type(in.dtype()),
                                       mpi_op(op, in.dtype()), world().comm),
              "MPI_Reduce_scatter_block", what);
    if (op == ReduceOp::Avg) divide_by_world(out);
  });
#else
  (void)count;
  return Work();
#endif
}
void reduce_scatter_tensor(Tensor& out, const Tensor& in, ReduceOp op) {
  reduce_scatter_tensor_async(out, in, op).wait();
}

void barrier() {
  require_init("barrier");
  Signature s;
  s.seq = world().seq++;
  s.kind = kBarrier;
  s.what = "barrier";
#if TG_HAVE_MPI
  submit(s, [] { mpi_check(MPI_Barrier(world().comm), "MPI_Barrier", "barrier"); }).wait();
#endif
}

std::vector<std::string> all_gather_object(const std::string& bytes) {
  require_init("all_gather_object");
  Signature s;
  s.seq = world().seq++;
  s.kind = kObject;
  s.what = "all_gather_object";
  std::vector<std::string> out;
#if TG_HAVE_MPI
  submit(s, [&] {
    World& w = world();
    std::vector<int> lens(static_cast<size_t>(w.size)), displs(static_cast<size_t>(w.size));
    int mine = count_of("all_gather_object", static_cast<int64_t>(bytes.size()));
    mpi_check(MPI_Allgather(&mine, 1, MPI_INT, lens.data(), 1, MPI_INT, w.comm), "MPI_Allgather",
              s.what);
    int64_t total = 0;
    for (int r = 0; r < w.size; ++r) {
      displs[r] = static_cast<int>(total);
      total += lens[r];
    }
    count_of("all_gather_object", total);
    std::string all(static_cast<size_t>(total), '\0');
    mpi_check(MPI_Allgatherv(bytes.data(), mine, MPI_CHAR, all.data(), lens.data(), displs.data(),
                             MPI_CHAR, w.comm),
              "MPI_Allgatherv", s.what);
    for (int r = 0; r < w.size; ++r) out.push_back(all.substr(displs[r], lens[r]));
  }).wait();
#endif
  return out;
}

std::string broadcast_object(const std::string& bytes, int root) {
  require_init("broadcast_object");
  Signature s;
  s.seq = world().seq++;
  s.kind = kObject;
  s.arg = root;
  s.what = fmt::format("broadcast_object(root {})", root);
  std::string out = bytes;
#if TG_HAVE_MPI
  submit(s, [&] {
    World& w = world();
    int64_t n = static_cast<int64_t>(out.size());
    mpi_check(MPI_Bcast(&n, 1, MPI_INT64_T, root, w.comm), "MPI_Bcast", s.what);
    out.resize(static_cast<size_t>(n));
    mpi_check(MPI_Bcast(out.data(), count_of("broadcast_object", n), MPI_CHAR, root, w.comm),
              "MPI_Bcast", s.what);
  }).wait();
#endif
  return out;
}

Stats stats() {
  std::lock_guard<std::mutex> lk(world().stats_mu);
  return world().stats;
}
void reset_stats() {
  std::lock_guard<std::mutex> lk(world().stats_mu);
  world().stats = Stats();
}

}  // namespace tg::dist
