// nn/dist/world.hpp — internal to nn/dist: the world every backend shares. The processes (rank,
// size, the MPI communicator that start-up, the handshake and the objects use), the
// communication thread with its FIFO, the handshake's signature, submit() and the counters.
// world.cpp implements them; the tensor collectives themselves are the backends'
// (nn/dist/backend.hpp). Deliberately not here: the public API (dist.hpp, dist.cpp).
#pragma once

#include "nn/dist/dist.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#if TG_HAVE_MPI
#include <mpi.h>
#endif

namespace tg::dist::detail {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0);

enum Kind : int64_t { kAllReduce = 1, kBroadcast, kAllGather, kReduceScatter, kBarrier, kObject };
const char* kind_name(int64_t k);

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
#if TG_HAVE_MPI
  MPI_Comm comm = MPI_COMM_NULL;
#endif
};
World& world();

[[noreturn]] void fail(const std::string& msg);
void require_init(const char* what);
// n as an MPI count, or an error naming op when it exceeds INT_MAX.
int count_of(const char* op, int64_t n);
void add_stat(double Stats::*field, double v);
void count_stat(int64_t Stats::*field);

// The next signature of this rank: kind, t's dtype, numel and shape, one argument.
Signature signature(int64_t kind, const Tensor& t, int64_t arg, const std::string& what);
Signature signature(int64_t kind, int64_t arg, const std::string& what);  // no tensor
// "all_reduce(sum) float32 (4,3)", with " on cuda:0" for a device tensor.
std::string describe(const char* op, const Tensor& t, const std::string& arg = "");
// Queues fn on the communication thread, after the handshake on sig (when checks are on); the
// Work completes when fn returns or throws. A null fn runs the handshake alone.
Work submit(Signature sig, std::function<void()> fn);

// The communication thread's loop (init starts it) and the process-exit hooks.
void comm_loop();
void install_exit_handlers();

#if TG_HAVE_MPI
// Throws naming `what`, the call and this rank unless rc is MPI_SUCCESS.
void mpi_check(int rc, const char* call, const std::string& what);
#endif

}  // namespace tg::dist::detail
