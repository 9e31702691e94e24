// nn/dist/dist.hpp — tg::dist: the processes of a data-parallel run and collectives on tensors.
//
// Processes come from `mpirun -np N prog ...` (Debian's Open MPI); init() joins them. Collectives
// run over MPI for CPU tensors and over NCCL for CUDA tensors (the NCCL communicator is
// bootstrapped through MPI: rank 0 makes the unique id and broadcasts it). Both backends are
// optional at build time: without MPI, init() throws saying how to get it; without NCCL, a
// collective on a CUDA tensor throws saying the build has none.
//
//   tg::dist::init();                       // from mpirun; a plain start is world size 1
//   tg::dist::all_reduce(grad, tg::dist::ReduceOp::Avg);
//
// Every CPU collective runs on one communication thread, in the order the program issued them,
// so the *_async forms overlap communication with the caller's work (DDP's gradient buckets).
// Each collective is preceded by a handshake (a 12-number all-reduce) that checks every rank
// issued the same collective on the same dtype and shape: a mismatch is a tg::Error on every rank
// naming the collective, each rank and its tensor, instead of a hang or garbage. It costs one
// small message per collective (bench/ measures it); TG_DIST_CHECK=0 turns it off.
//
// Faults: a collective that does not complete within the timeout (InitOptions.timeout_s,
// TG_DIST_TIMEOUT, default 300 s) aborts the whole job with a message naming the collective. An
// uncaught exception on any rank prints "rank R: ..." and aborts every rank (std::terminate
// handler); call dist::abort(message) where a program catches its own errors. A rank killed by a
// signal is reported by mpirun, which then stops the others.
// Deliberately not here: subgroups (every collective is over all ranks), point-to-point sends.
#pragma once

#include "autograd/tensor.hpp"

#include <memory>
#include <string>
#include <vector>

namespace tg::dist {

enum class ReduceOp { Sum, Avg, Max, Min };
const char* reduce_op_name(ReduceOp op);

bool built_with_mpi();
bool built_with_nccl();
// True when this process was started by mpirun (its environment names a rank).
bool launched_by_mpirun();

struct InitOptions {
  double timeout_s = -1;  // per collective; -1: $TG_DIST_TIMEOUT or 300
  int check = -1;         // shape/dtype handshake: 1 on, 0 off, -1: $TG_DIST_CHECK or on
};
// Joins the job (MPI_Init_thread). Safe to call twice. Throws when built without MPI.
void init(const InitOptions& opts = {});
bool is_initialized();
// rank 0 of world size 1 before init (a single process is a world of one).
int rank();
int world_size();
int local_rank();  // rank among the processes on this machine (picks the GPU)
int local_world_size();
// Leaves the job; also runs at exit. Collectives after it throw.
void finalize();
// Prints "tapegrad dist: rank R of N: <message>" to stderr and stops every rank (MPI_Abort).
// Without an initialised world of more than one rank, prints and exits with `code`.
[[noreturn]] void abort(const std::string& message, int code = 1);

// A collective in flight. wait() returns once it finished (rethrowing its error) and is
// idempotent; an undefined Work (default-constructed) is complete.
class Work {
 public:
  struct State;
  Work() = default;
  explicit Work(std::shared_ptr<State> s) : state_(std::move(s)) {}
  void wait();
  bool completed() const;

 private:
  std::shared_ptr<State> state_;
};

// ---- collectives over every rank; tensors contiguous, same dtype, shape and device on every
// rank; float32, float64, int64 and bool (Sum/Max on bool: or; Min: and; Avg: floating only).
// In place: t holds the result on every rank.
void all_reduce(Tensor& t, ReduceOp op = ReduceOp::Sum);
Work all_reduce_async(Tensor t, ReduceOp op = ReduceOp::Sum);
// root's values to every rank, in place.
void broadcast(Tensor& t, int root = 0);
// Every rank's t, in rank order (PyTorch's all_gather).
std::vector<Tensor> all_gather(const Tensor& t);
// out = every rank's `in` concatenated along dim 0: out is (N·d0, ...) for `in` (d0, ...).
void all_gather_into_tensor(Tensor& out, const Tensor& in);
Work all_gather_into_tensor_async(Tensor out, Tensor in);
// in is (N·d0, ...); rank r gets the reduction of every rank's block r into out (d0, ...).
void reduce_scatter_tensor(Tensor& out, const Tensor& in, ReduceOp op = ReduceOp::Sum);
Work reduce_scatter_tensor_async(Tensor out, Tensor in, ReduceOp op = ReduceOp::Sum);
void barrier();

// ---- objects (bytes): what DDP's and the checkpoints' consistency checks exchange ----
std::vector<std::string> all_gather_object(const std::string& bytes);
std::string broadcast_object(const std::string& bytes, int root = 0);

// Counters for bench/ and tests: collectives issued, handshakes run, seconds the caller spent
// blocked in wait() (communication not hidden behind other work).
struct Stats {
  int64_t collectives = 0;
  int64_t handshakes = 0;
  double wait_s = 0;
  double comm_s = 0;  // seconds the communication thread spent inside MPI calls
};
Stats stats();
void reset_stats();

}  // namespace tg::dist
