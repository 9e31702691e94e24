// nn/dist/world.cpp — the world every backend shares (world.hpp): the communication thread and
// submit(), the handshake before every collective (over MPI), signatures, counters, and the
// process-exit hooks. Deliberately not here: MPI start-up and shutdown (dist.cpp), the tensor
// collectives (the backends).
#include "nn/dist/world.hpp"

#include <fmt/format.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <vector>

namespace tg::dist {

struct Work::State {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::exception_ptr error;
  std::string what;  // "all_reduce(sum) float32 (4,3)"
};

namespace detail {

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

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

World& world() {
  static World w;
  return w;
}

void fail(const std::string& msg) { throw Error(msg); }

void require_init(const char* what) {
  World& w = world();
  if (w.finalized) fail(fmt::format("{}: tg::dist was finalized", what));
  if (!w.initialized)
    fail(fmt::format("{}: call tg::dist::init() first (run the program under mpirun -np N)", what));
}

int count_of(const char* op, int64_t n) {
  if (n > INT_MAX)
    fail(fmt::format("{}: {} elements is more than one collective moves ({}); split the tensor", op,
                     n, INT_MAX));
  return static_cast<int>(n);
}

void add_stat(double Stats::*field, double v) {
  std::lock_guard<std::mutex> lk(world().stats_mu);
  world().stats.*field += v;
}
void count_stat(int64_t Stats::*field) {
  std::lock_guard<std::mutex> lk(world().stats_mu);
  ++(world().stats.*field);
}

namespace {
#if TG_HAVE_MPI
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

int64_t shape_hash(const Shape& s) {
  uint64_t h = 1469598103934665603ull;
  for (int64_t d : s) h = (h ^ static_cast<uint64_t>(d)) * 1099511628211ull;
  h = (h ^ s.size()) * 1099511628211ull;
  return static_cast<int64_t>(h >> 1);
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

#if TG_HAVE_MPI
void mpi_check(int rc, const char* call, const std::string& what) {
  if (rc == MPI_SUCCESS) return;
  char buf[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, buf, &len);
  fail(fmt::format("{}: {} failed on rank {}: {}", what, call, world().rank,
                   std::string(buf, static_cast<size_t>(len))));
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

void install_exit_handlers() {
  std::set_terminate(terminate_handler);
  std::atexit(at_exit);
}

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
#else
      (void)check;
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

std::string describe(const char* op, const Tensor& t, const std::string& arg) {
  return fmt::format("{}{} {} {}{}", op, arg.empty() ? "" : "(" + arg + ")", dtype_name(t.dtype()),
                     shape_str(t.shape()), t.is_cuda() ? " on " + t.device().str() : "");
}

Signature signature(int64_t kind, const Tensor& t, int64_t arg, const std::string& what) {
  Signature s = signature(kind, arg, what);
  s.dtype = static_cast<int64_t>(t.dtype());
  s.numel = t.numel();
  s.shape_hash = shape_hash(t.shape());
  return s;
}
Signature signature(int64_t kind, int64_t arg, const std::string& what) {
  Signature s;
  s.seq = world().seq++;
  s.kind = kind;
  s.arg = arg;
  s.what = what;
  return s;
}

}  // namespace detail

// ---- Work ----
void Work::wait() {
  if (!state_) return;
  detail::World& w = detail::world();
  auto t0 = detail::Clock::now();
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
  detail::add_stat(&Stats::wait_s, detail::seconds_since(t0));
  if (state_->error) std::rethrow_exception(state_->error);
}
bool Work::completed() const {
  if (!state_) return true;
  std::lock_guard<std::mutex> lk(state_->mu);
  return state_->done;
}

Stats stats() {
  std::lock_guard<std::mutex> lk(detail::world().stats_mu);
  return detail::world().stats;
}
void reset_stats() {
  std::lock_guard<std::mutex> lk(detail::world().stats_mu);
  detail::world().stats = Stats();
}

}  // namespace tg::dist
