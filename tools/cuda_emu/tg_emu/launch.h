// tools/cuda_emu/tg_emu/launch.h — running a kernel launch on the host. Blocks run one after
// another; inside a block every CUDA thread is a coroutine with its own stack (context.h). A thread
// runs until it finishes or reaches a collective (__syncthreads*, __syncwarp, a shuffle, a vote),
// where it parks; when every thread that the collective names has parked there, the scheduler
// computes the result for all of them (so a shuffle is one rendezvous) and lets them go on.
// Nothing can run while it waits, so a collective that some threads never reach is found at once:
// the launch fails (cudaErrorLaunchFailure) with a description on stderr. Checked, as undefined
// behaviour in CUDA: __syncthreads not reached by every thread of the block (including threads
// that returned early) or reached at different call sites; a warp collective whose named lanes
// are at different intrinsics, call sites or masks, or whose mask leaves out the caller.
// Threads run in a shuffled order between collectives and blocks in a shuffled order
// (TG_EMU_SCHEDULE=forward|reverse|shuffle, default shuffle, seeded per launch so runs repeat),
// so a missing barrier or an assumed block order shows up as a wrong result.
// Deliberately not modelled: timing, concurrency between blocks (a kernel that spins on another
// block's progress hangs), memory-model races beyond what the shuffled order exposes, register
// and occupancy limits, streams running concurrently (every launch completes before returning).
// __shared__ variables are function statics, shared by the block as they should be; the first
// thread of each block to reach the declaration fills them with NaN bytes (rewrite_launches.py,
// device.h: shared_poison), and dynamic shared memory is refilled for each block.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tg_emu/context.h"
#include "tg_emu/memory.h"

// CUDA's built-in vector types for indices and sizes.
struct uint3 {
  unsigned x, y, z;
};
struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
};
typedef struct CUstream_st* cudaStream_t;
struct CUstream_st {
  int device;
};

namespace tg_emu {

enum class Wait : uint8_t { Ready, Warp, Block, Done };
enum class Op : uint8_t {
  SyncWarp,
  ShflIdx,
  ShflUp,
  ShflDown,
  ShflXor,
  Ballot,
  Any,
  All,  // warp collectives
  Sync,
  SyncOr,
  SyncAnd,
  SyncCount  // block collectives
};
inline const char* op_name(Op op) {
  static const char* names[] = {"__syncwarp",       "__shfl_sync",       "__shfl_up_sync",
                                "__shfl_down_sync", "__shfl_xor_sync",   "__ballot_sync",
                                "__any_sync",       "__all_sync",        "__syncthreads",
                                "__syncthreads_or", "__syncthreads_and", "__syncthreads_count"};
  return names[static_cast<int>(op)];
}

struct Thread {
  Context ctx;
  Wait wait = Wait::Done;
  uint3 idx{};
  unsigned lin = 0;  // linear index in the block; lane = lin % 32, warp = lin / 32
  // The collective this thread is parked at:
  Op op = Op::Sync;
  unsigned mask = 0;
  int arg = 0, width = 32, line = 0;
  const char* file = "";
  uint64_t in = 0, out = 0;
  // cp.async copies issued and not yet completed (device.h), and the number of commits so far:
  // a copy belongs to group `group`; groups below `committed` are committed.
  struct CpAsync {
    void* dst;
    const void* src;
    int bytes, src_bytes, group;
  };
  std::vector<CpAsync> cp_pending;
  int committed = 0;
};

// The state of the running launch (one at a time: memory().lock is held).
struct Launch {
  std::vector<Thread> threads;  // 1024, never reallocated (contexts point into it)
  char* stacks = nullptr;
  size_t stack_stride = 0;
  Context sched;
  const char* name = "";
  dim3 grid, block;
  unsigned nthreads = 0;
  void (*body)(void*) = nullptr;
  void* body_arg = nullptr;
  std::vector<unsigned char> dyn_smem;
  std::vector<void*> poisoned;  // __shared__ variables already poisoned in this block (device.h)
  // Shared memory of this block as (start, bytes): the dynamic buffer, then each __shared__
  // variable once reached. A 32-bit shared address (__cvta_generic_to_shared) is
  // (window + 1) << 24 | offset.
  std::vector<std::pair<char*, size_t>> windows;
  std::string error;  // the first failure of this launch
  uint64_t rng = 0;
  int schedule = 2;  // 0 forward, 1 reverse, 2 shuffle
  bool trace = false;
  Launch() : threads(1024) {
    const char* kb = std::getenv("TG_EMU_STACK_KB");
    const size_t pg = memory().page, stack = kb ? size_t(std::atoll(kb)) << 10 : size_t(128) << 10;
    stack_stride = (stack + pg - 1) / pg * pg + pg;  // a guard page below each stack
    const size_t len = stack_stride * threads.size();
    void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      std::fprintf(stderr, "tg_emu: cannot map %zu bytes of thread stacks\n", len);
      std::abort();
    }
    stacks = static_cast<char*>(p);
    for (size_t i = 0; i < threads.size(); ++i) {
      mprotect(stacks + i * stack_stride, pg, PROT_NONE);
    }
    FaultContext& fc = fault_context();
    fc.stacks = stacks;
    fc.stacks_len = len;
    fc.stack_stride = stack_stride;
    if (const char* s = std::getenv("TG_EMU_SCHEDULE"))
      schedule = !std::strcmp(s, "forward") ? 0 : !std::strcmp(s, "reverse") ? 1 : 2;
    const char* t = std::getenv("TG_EMU_TRACE");
    trace = t && t[0] == '1';
  }
};
inline Launch& launch_state() {
  static Launch* l = new Launch;
  return *l;
}

// What device code reads (threadIdx & co. in device.h).
inline Thread* g_cur = nullptr;
inline uint3 g_block_idx{};
inline dim3 g_block_dim, g_grid_dim;

// ---- failing ----
inline std::string& last_failure() {  // cudaGetErrorString's detail for cudaErrorLaunchFailure
  static std::string s;
  return s;
}
inline std::string where() {
  char b[160];
  if (g_cur)
    std::snprintf(b, sizeof b, "block (%u,%u,%u) thread (%u,%u,%u)", g_block_idx.x, g_block_idx.y,
                  g_block_idx.z, g_cur->idx.x, g_cur->idx.y, g_cur->idx.z);
  else
    std::snprintf(b, sizeof b, "block (%u,%u,%u)", g_block_idx.x, g_block_idx.y, g_block_idx.z);
  return b;
}
// Called from device code: records the failure and abandons the block (the thread never resumes).
[[noreturn]] inline void device_fail(const std::string& msg) {
  Launch& l = launch_state();
  if (!g_cur) {
    std::fprintf(stderr, "tg_emu: %s (called outside a kernel)\n", msg.c_str());
    std::abort();
  }
  if (l.error.empty()) l.error = where() + ": " + msg;
  g_cur->wait = Wait::Done;
  context_switch(g_cur->ctx, l.sched);
  std::abort();  // not reached
}

// ---- collectives (called by device.h's intrinsics) ----
inline uint64_t collective(Wait kind, Op op, unsigned mask, int arg, int width, uint64_t in,
                           const char* file, int line) {
  Thread* t = g_cur;
  if (!t) {
    std::fprintf(stderr, "tg_emu: %s called outside a kernel (%s:%d)\n", op_name(op), file, line);
    std::abort();
  }
  if (kind == Wait::Warp) {
    if (!((mask >> (t->lin & 31)) & 1u))
      device_fail(std::string(op_name(op)) + " at " + file + ":" + std::to_string(line) +
                  ": the mask leaves out the calling lane");
    if (width < 1 || width > 32 || (width & (width - 1)))
      device_fail(std::string(op_name(op)) + ": width " + std::to_string(width) +
                  " is not a power of two up to 32");
  }
  t->wait = kind;
  t->op = op;
  t->mask = mask;
  t->arg = arg;
  t->width = width;
  t->in = in;
  t->file = file;
  t->line = line;
  context_switch(t->ctx, launch_state().sched);
  return t->out;
}

inline bool same_site(const Thread& a, const Thread& b) {
  return a.line == b.line && (a.file == b.file || !std::strcmp(a.file, b.file));
}

// Poison for values read from a lane that did not take part (undefined in CUDA).
constexpr uint64_t kPoison = ~uint64_t(0);

// Releases every warp collective whose named, non-exited lanes are all parked at it.
inline bool resolve_warps(Launch& l) {
  bool progress = false;
  for (unsigned base = 0; base < l.nthreads; base += 32) {
    const unsigned lanes = l.nthreads - base < 32 ? l.nthreads - base : 32;
    Thread* w = &l.threads[base];
    for (unsigned i = 0; i < lanes; ++i) {
      const Thread& t = w[i];
      if (t.wait != Wait::Warp) continue;
      unsigned present = 0;
      bool ok = true;
      for (unsigned j = 0; j < lanes && ok; ++j) {
        if (!((t.mask >> j) & 1u) || w[j].wait == Wait::Done) continue;
        const Thread& u = w[j];
        ok = u.wait == Wait::Warp && u.op == t.op && u.mask == t.mask &&
             (t.op == Op::SyncWarp || same_site(t, u));
        present |= 1u << j;
      }
      if (!ok) continue;
      uint64_t vote = 0;
      bool any = false, all = true;
      for (unsigned j = 0; j < lanes; ++j)
        if ((present >> j) & 1u) {
          vote |= uint64_t(w[j].in != 0) << j;
          any = any || w[j].in != 0;
          all = all && w[j].in != 0;
        }
      for (unsigned j = 0; j < lanes; ++j) {
        if (!((present >> j) & 1u)) continue;
        Thread& u = w[j];
        const int wd = u.width, seg = int(j) & ~(wd - 1), pos = int(j) - seg;
        int src = int(j);  // shuffles: the lane read; own value when out of the segment
        switch (u.op) {
          case Op::ShflIdx:
            src = seg + (u.arg & (wd - 1));
            break;
          case Op::ShflUp:
            src = pos - u.arg >= 0 ? int(j) - u.arg : int(j);
            break;
          case Op::ShflDown:
            src = pos + u.arg < wd ? int(j) + u.arg : int(j);
            break;
          case Op::ShflXor: {
            const int x = int(j) ^ u.arg;
            src = x >= 0 && x < seg + wd && x < 32 ? x : int(j);
            break;
          }
          default:
            break;
        }
        if (u.op == Op::Ballot)
          u.out = vote;
        else if (u.op == Op::Any)
          u.out = any;
        else if (u.op == Op::All)
          u.out = all;
        else if (u.op == Op::SyncWarp)
          u.out = 0;
        else
          u.out = ((present >> src) & 1u) ? w[src].in : kPoison;
      }
      for (unsigned j = 0; j < lanes; ++j)
        if ((present >> j) & 1u) w[j].wait = Wait::Ready;
      progress = true;
    }
  }
  return progress;
}

// Releases a __syncthreads* once every thread of the block is parked at it.
inline bool resolve_block(Launch& l) {
  unsigned at = 0, done = 0;
  const Thread* first = nullptr;
  for (unsigned i = 0; i < l.nthreads; ++i) {
    const Thread& t = l.threads[i];
    if (t.wait == Wait::Block) {
      ++at;
      if (!first) first = &t;
    }
    done += t.wait == Wait::Done;
  }
  if (at == 0 || at + done < l.nthreads) return false;
  char b[512];
  if (done > 0) {
    std::snprintf(b, sizeof b,
                  "%s at %s:%d reached by %u threads while %u threads of the block "
                  "had exited (undefined behaviour: every thread must reach it)",
                  op_name(first->op), first->file, first->line, at, done);
    l.error = b;
    return false;
  }
  uint64_t count = 0;
  for (unsigned i = 0; i < l.nthreads; ++i) {
    const Thread& t = l.threads[i];
    if (t.op != first->op || !same_site(t, *first)) {
      std::snprintf(b, sizeof b,
                    "thread %u waits at %s (%s:%d) while thread %u waits at %s "
                    "(%s:%d): divergent barriers",
                    first->lin, op_name(first->op), first->file, first->line, t.lin, op_name(t.op),
                    t.file, t.line);
      l.error = b;
      return false;
    }
    count += t.in != 0;
  }
  for (unsigned i = 0; i < l.nthreads; ++i) {
    Thread& t = l.threads[i];
    t.out = t.op == Op::SyncOr ? count > 0 : t.op == Op::SyncAnd ? count == l.nthreads : count;
    t.wait = Wait::Ready;
  }
  return true;
}

inline std::string describe_stuck(const Launch& l) {
  std::string s = "deadlock: no thread can go on.";
  unsigned done = 0;
  for (unsigned i = 0; i < l.nthreads; ++i) done += l.threads[i].wait == Wait::Done;
  s += " " + std::to_string(done) + " of " + std::to_string(l.nthreads) + " threads exited;";
  // One line per distinct (op, site, mask) with the threads parked there.
  std::vector<const Thread*> shown;
  for (unsigned i = 0; i < l.nthreads; ++i) {
    const Thread& t = l.threads[i];
    if (t.wait == Wait::Done) continue;
    bool seen = false;
    for (const Thread* p : shown)
      seen = seen || (p->op == t.op && same_site(*p, t) && p->mask == t.mask);
    if (seen) continue;
    shown.push_back(&t);
    unsigned n = 0, lo = ~0u, hi = 0;
    for (unsigned j = 0; j < l.nthreads; ++j) {
      const Thread& u = l.threads[j];
      if (u.wait != Wait::Done && u.op == t.op && same_site(u, t) && u.mask == t.mask) {
        ++n;
        lo = j < lo ? j : lo;
        hi = j;
      }
    }
    char b[256];
    std::snprintf(b, sizeof b, " %u threads (%u..%u) at %s (%s:%d, mask 0x%08x);", n, lo, hi,
                  op_name(t.op), t.file, t.line, t.mask);
    s += b;
    if (shown.size() > 6) break;
  }
  return s;
}

inline uint64_t next_random(uint64_t& s) {  // splitmix64
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
// The indices of [0, n) in order, reversed, or pseudo-randomly permuted (k -> a·k + c mod n,
// a coprime with n): next() gives the following one.
struct Order {
  uint64_t a = 1, cur = 0, n = 1;
  bool reverse = false;
  Order(int schedule, uint64_t n_, uint64_t& rng) : n(n_ ? n_ : 1) {
    reverse = schedule == 1;
    if (reverse) cur = n - 1;
    if (schedule != 2 || n < 3) return;
    auto gcd = [](uint64_t x, uint64_t y) {
      while (y) {
        uint64_t t = x % y;
        x = y;
        y = t;
      }
      return x;
    };
    do a = next_random(rng) % n;
    while (a == 0 || gcd(a, n) != 1);
    cur = next_random(rng) % n;
  }
  uint64_t next() {
    const uint64_t k = cur;
    if (reverse) {
      cur = cur ? cur - 1 : n - 1;
    } else {
      cur += a;
      if (cur >= n) cur -= n;
    }
    return k;
  }
};

inline void thread_main() {
  Launch& l = launch_state();
  l.body(l.body_arg);
  g_cur->wait = Wait::Done;
  context_switch(g_cur->ctx, l.sched);
}

// Runs block g_block_idx; false (l.error set) when it failed.
inline bool run_block(Launch& l) {
  const unsigned n = l.nthreads;
  for (unsigned i = 0; i < n; ++i) {
    Thread& t = l.threads[i];
    t.wait = Wait::Ready;
    t.lin = i;
    t.cp_pending.clear();
    t.committed = 0;
    t.idx = {i % l.block.x, (i / l.block.x) % l.block.y, i / (l.block.x * l.block.y)};
    context_init(t.ctx, l.stacks + i * l.stack_stride + memory().page,
                 l.stack_stride - memory().page, thread_main);
  }
  if (!l.dyn_smem.empty()) std::memset(l.dyn_smem.data(), 0xff, l.dyn_smem.size());
  l.poisoned.clear();
  l.windows.assign(1, {reinterpret_cast<char*>(l.dyn_smem.data()), l.dyn_smem.size()});
  FaultContext& fc = fault_context();
  fc.block[0] = g_block_idx.x, fc.block[1] = g_block_idx.y, fc.block[2] = g_block_idx.z;
  for (;;) {
    Order order(l.schedule, n, l.rng);
    for (unsigned k = 0; k < n; ++k) {
      Thread& t = l.threads[order.next()];
      if (t.wait != Wait::Ready) continue;
      g_cur = &t;
      fc.thread[0] = t.idx.x, fc.thread[1] = t.idx.y, fc.thread[2] = t.idx.z;
      context_switch(l.sched, t.ctx);
      g_cur = nullptr;
      if (!l.error.empty()) return false;
    }
    bool finished = true;
    for (unsigned i = 0; i < n && finished; ++i) finished = l.threads[i].wait == Wait::Done;
    if (finished) return true;
    const bool warps = resolve_warps(l);
    const bool block = resolve_block(l);
    if (!l.error.empty()) return false;
    if (!warps && !block) {
      l.error = describe_stuck(l);
      return false;
    }
  }
}

// ---- launching ----
struct Cfg {
  dim3 grid, block;
  size_t smem;
  cudaStream_t stream;
  Cfg(dim3 g, dim3 b, size_t s = 0, cudaStream_t st = nullptr)
      : grid(g), block(b), smem(s), stream(st) {}
};

// Implemented in cuda_runtime.h: the error state and the launch checks of the runtime.
inline int check_launch(const char* name, const void* key, const Cfg& c);
inline void set_launch_error(int code);

inline uint64_t& launch_count() {
  static uint64_t n = 0;
  return n;
}

inline void launch_erased(const char* name, const void* key, const Cfg& c, void (*body)(void*),
                          void* arg) {
  DeviceScope scope;  // device memory open, emulator locked
  if (check_launch(name, key, c) != 0) return;
  Launch& l = launch_state();
  const auto t0 = std::chrono::steady_clock::now();
  l.name = name;
  l.grid = c.grid;
  l.block = c.block;
  l.nthreads = c.block.x * c.block.y * c.block.z;
  l.body = body;
  l.body_arg = arg;
  l.error.clear();
  l.rng = 0x5eed0000ull + ++launch_count();
  l.dyn_smem.assign(c.smem, 0xff);
  g_grid_dim = c.grid;
  g_block_dim = c.block;
  FaultContext& fc = fault_context();
  fc.kernel = name;
  const uint64_t blocks = uint64_t(c.grid.x) * c.grid.y * c.grid.z;
  Order order(l.schedule, blocks, l.rng);
  bool ok = true;
  for (uint64_t k = 0; k < blocks && ok; ++k) {
    const uint64_t b = order.next();
    g_block_idx = {unsigned(b % c.grid.x), unsigned(b / c.grid.x % c.grid.y),
                   unsigned(b / (uint64_t(c.grid.x) * c.grid.y))};
    ok = run_block(l);
  }
  fc.kernel = nullptr;
  if (!ok) {
    last_failure() = std::string("kernel ") + name + " <<<(" + std::to_string(c.grid.x) + "," +
                     std::to_string(c.grid.y) + "," + std::to_string(c.grid.z) + "), (" +
                     std::to_string(c.block.x) + "," + std::to_string(c.block.y) + "," +
                     std::to_string(c.block.z) + ")>>> " + l.error;
    std::fprintf(stderr, "tg_emu: %s\n", last_failure().c_str());
    set_launch_error(719);  // cudaErrorLaunchFailure
  }
  if (l.trace) {
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr, "tg_emu: %-40s grid (%u,%u,%u) block (%u,%u,%u) smem %zu: %.3f ms\n", name,
                 c.grid.x, c.grid.y, c.grid.z, c.block.x, c.block.y, c.block.z, c.smem, ms);
  }
}

// What `k<<<cfg>>>(args...);` becomes (rewrite_launches.py): the arguments are evaluated once,
// here, and every thread calls `body(copies...)`, i.e. the kernel with its own parameter copies.
template <typename Body, typename... A>
void launch(const char* name, const void* key, const Cfg& c, Body body, A&&... args) {
  std::tuple<std::decay_t<A>...> params(std::forward<A>(args)...);
  auto run = [&] { std::apply(body, params); };
  launch_erased(
      name, key, c, [](void* p) { (*static_cast<decltype(run)*>(p))(); }, &run);
}
// The identity of a kernel, as cudaFuncSetAttribute sees it: its address. TG_EMU_KEY(k) is null
// where the address cannot be taken: a function template whose arguments the launch deduces.
template <typename Dependent, typename R, typename... P>
const void* key_of(R (*f)(P...)) {
  return reinterpret_cast<const void*>(f);
}
template <typename F>
const void* key_or_null(F f) {
  if constexpr (std::is_invocable_v<F, int>)
    return f(0);
  else
    return nullptr;
}
#define TG_EMU_KEY(...)                                                                            \
  ::tg_emu::key_or_null([](auto tg_t) -> decltype(::tg_emu::key_of<decltype(tg_t)>(__VA_ARGS__)) { \
    return ::tg_emu::key_of<decltype(tg_t)>(__VA_ARGS__);                                          \
  })

}  // namespace tg_emu
