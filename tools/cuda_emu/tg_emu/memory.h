// tools/cuda_emu/tg_emu/memory.h — the emulator's device memory. Every cudaMalloc is its own
// mmap: the block sits at the end of its pages (256-byte aligned, like cudaMalloc) between two
// inaccessible guard pages, and is filled with 0xff bytes (NaN as float or double) so a kernel
// that reads memory nobody wrote sees NaN, not a lucky zero. Device blocks are PROT_NONE except
// while emulated device work (a kernel, a cudaMemcpy, a cuBLAS or CUB call) runs and touches
// them: the SIGSEGV handler here opens a block on its first touch inside such work (so each
// operation costs a few mprotect calls, not one per live block) and closes what it opened when
// the work ends. Any other touch is reported (which allocation, which offset; for a kernel, which
// thread): host code that dereferences a device pointer, a kernel running off a block into a
// guard page, a freed block. TG_EMU_GUARD=0 leaves blocks readable (the guard pages remain).
// In gdb: `handle SIGSEGV nostop noprint pass` lets the on-demand opening through.
// Deliberately not modelled: alignment above 256 bytes, unified/managed memory, peer access
// rules, pinned host memory, bounds inside a block (the caching allocator above rounds sizes up).
#pragma once

#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

namespace tg_emu {

struct Region {
  char* map;  // the whole mapping: guard page, data pages, guard page
  size_t map_len;
  char* base;    // what cudaMalloc returned
  size_t bytes;  // what it was asked for
  int device;
};

struct Memory {
  std::recursive_mutex lock;         // one emulated device operation at a time
  std::map<uintptr_t, Region> live;  // by base address
  size_t live_bytes = 0;
  size_t limit = size_t(8) << 30;  // cudaMalloc fails beyond (TG_EMU_MEMORY_MB)
  int open_depth = 0;              // > 0 while device work runs on thread `owner`
  pthread_t owner{};
  bool guard = true;
  size_t page = 4096;
  // Blocks the fault handler opened for the running device work (fixed size: no allocation in a
  // signal handler); past kMaxOpened it opens every block.
  static constexpr int kMaxOpened = 512;
  const Region* opened[kMaxOpened] = {};
  int n_opened = 0;
  bool all_opened = false;
  Memory() {
    const char* g = std::getenv("TG_EMU_GUARD");
    guard = !(g && g[0] == '0');
    if (const char* m = std::getenv("TG_EMU_MEMORY_MB")) limit = size_t(std::atoll(m)) << 20;
    page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  }
};
inline Memory& memory() {
  static Memory* m = new Memory;  // never destroyed: tensors may be freed during exit
  return *m;
}

// The data pages of a region (everything between the guard pages).
inline void protect(const Region& r, bool open) {
  const size_t pg = memory().page;
  mprotect(r.map + pg, r.map_len - 2 * pg, open ? PROT_READ | PROT_WRITE : PROT_NONE);
}

// The live region holding [p, p + bytes), or null.
inline const Region* find_region(const void* p, size_t bytes = 1) {
  Memory& m = memory();
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  auto it = m.live.upper_bound(a);
  if (it == m.live.begin()) return nullptr;
  --it;
  const Region& r = it->second;
  const uintptr_t b = reinterpret_cast<uintptr_t>(r.base);
  if (a < b || a + bytes > b + r.bytes) return nullptr;
  return &r;
}
inline bool is_device_pointer(const void* p) { return find_region(p, 0) != nullptr; }

// The live region whose mapping (guard pages included) holds address a, or null.
inline const Region* mapping_of(uintptr_t a) {
  for (auto& kv : memory().live) {
    const uintptr_t map = reinterpret_cast<uintptr_t>(kv.second.map);
    if (a >= map && a < map + kv.second.map_len) return &kv.second;
  }
  return nullptr;
}

inline void install_fault_handler();

// RAII: the scope is emulated device work (blocks open on first touch; the emulator is locked).
class DeviceScope {
 public:
  DeviceScope() : hold_(memory().lock) {
    Memory& m = memory();
    if (m.open_depth++ == 0) {
      m.owner = pthread_self();
      install_fault_handler();
    }
  }
  ~DeviceScope() {
    Memory& m = memory();
    if (--m.open_depth > 0 || !m.guard) return;
    if (m.all_opened)
      for (auto& kv : m.live) protect(kv.second, false);
    else
      for (int i = 0; i < m.n_opened; ++i) protect(*m.opened[i], false);
    m.n_opened = 0;
    m.all_opened = false;
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  std::lock_guard<std::recursive_mutex> hold_;
};

// ---- diagnosing faults ----
// What the launch machinery (launch.h) tells the handler about the running kernel.
struct FaultContext {
  const char* kernel = nullptr;  // null outside kernels
  unsigned block[3] = {}, thread[3] = {};
  char* stacks = nullptr;
  size_t stacks_len = 0, stack_stride = 0;
};
inline FaultContext& fault_context() {
  static FaultContext c;
  return c;
}

// Writes what address a is; false when it is none of the emulator's memory.
inline bool describe_address(char* buf, size_t n, uintptr_t a) {
  if (const Region* r = mapping_of(a)) {
    const uintptr_t b = reinterpret_cast<uintptr_t>(r->base);
    if (a >= b && a < b + r->bytes)
      std::snprintf(buf, n, "offset %zu of the %zu-byte device block at %p", size_t(a - b),
                    r->bytes, static_cast<void*>(r->base));
    else if (a >= b + r->bytes)
      std::snprintf(buf, n, "%zu bytes past the end of the %zu-byte device block at %p",
                    size_t(a - b - r->bytes), r->bytes, static_cast<void*>(r->base));
    else
      std::snprintf(buf, n, "%zu bytes before the %zu-byte device block at %p", size_t(b - a),
                    r->bytes, static_cast<void*>(r->base));
    return true;
  }
  FaultContext& c = fault_context();
  const uintptr_t s = reinterpret_cast<uintptr_t>(c.stacks);
  if (c.stacks && a >= s && a < s + c.stacks_len) {
    std::snprintf(buf, n,
                  "a guard page of the emulated thread stacks: stack overflow (stacks are "
                  "%zu KiB; TG_EMU_STACK_KB)",
                  c.stack_stride >> 10);
    return true;
  }
  std::snprintf(buf, n,
                "memory that is not a live device block (a host pointer, freed device "
                "memory, or a wild address)");
  return false;
}

inline struct sigaction& previous_segv() {
  static struct sigaction prev;
  return prev;
}

// Inside device work on the owning thread, a first touch of a block's data pages opens the block.
inline bool open_on_demand(uintptr_t a) {
  Memory& m = memory();
  if (!m.guard || m.open_depth == 0 || !pthread_equal(m.owner, pthread_self())) return false;
  const Region* r = mapping_of(a);
  const uintptr_t data = r ? reinterpret_cast<uintptr_t>(r->map) + m.page : 0;
  if (!r || a < data || a >= data + r->map_len - 2 * m.page || m.all_opened) return false;
  for (int i = 0; i < m.n_opened; ++i)
    if (m.opened[i] == r) return false;  // already open: the fault is something else
  if (m.n_opened < Memory::kMaxOpened) {
    protect(*r, true);
    m.opened[m.n_opened++] = r;
  } else {
    for (auto& kv : m.live) protect(kv.second, true);
    m.all_opened = true;
  }
  return true;
}

inline void on_segv(int sig, siginfo_t* info, void* uctx) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(info->si_addr);
  if (open_on_demand(a)) return;  // the access is retried and now succeeds
  FaultContext& c = fault_context();
  char where[256], msg[768];
  if (describe_address(where, sizeof where, a) || c.kernel) {
    if (c.kernel)
      std::snprintf(msg, sizeof msg,
                    "\ntg_emu: kernel %s, block (%u,%u,%u) thread (%u,%u,%u) touched %p: %s\n",
                    c.kernel, c.block[0], c.block[1], c.block[2], c.thread[0], c.thread[1],
                    c.thread[2], info->si_addr, where);
    else
      std::snprintf(msg, sizeof msg,
                    "\ntg_emu: host code touched device memory at %p: %s. A device pointer was "
                    "dereferenced on the host (run under gdb for the backtrace; TG_EMU_GUARD=0 "
                    "disables this check)\n",
                    info->si_addr, where);
    ssize_t ignored = write(2, msg, std::strlen(msg));
    (void)ignored;
  }
  // Fatal: let the handler that was there before ours report it (a test framework names the
  // test), then die by SIGSEGV when the access is retried.
  const struct sigaction prev = previous_segv();
  if ((prev.sa_flags & SA_SIGINFO) && prev.sa_sigaction)
    prev.sa_sigaction(sig, info, uctx);
  else if (!(prev.sa_flags & SA_SIGINFO) && prev.sa_handler != SIG_DFL &&
           prev.sa_handler != SIG_IGN)
    prev.sa_handler(sig);
  signal(SIGSEGV, SIG_DFL);
}

// Puts our handler first (again: a test framework may have installed its own since), with an
// alternate signal stack for this thread (a kernel thread that overflows its stack cannot run a
// handler on it).
inline void install_fault_handler() {
  thread_local bool alt = false;
  if (!alt) {
    alt = true;
    stack_t ss{};
    ss.ss_size = 1 << 16;  // kept for the thread's lifetime
    ss.ss_sp =
        mmap(nullptr, ss.ss_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (ss.ss_sp != MAP_FAILED) sigaltstack(&ss, nullptr);
  }
  struct sigaction cur {};
  sigaction(SIGSEGV, nullptr, &cur);
  if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_segv) return;
  struct sigaction sa {};
  sa.sa_sigaction = on_segv;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, &previous_segv());
}

// ---- allocation ----
inline void* device_alloc(size_t bytes, int device) {
  Memory& m = memory();
  std::lock_guard<std::recursive_mutex> hold(m.lock);
  install_fault_handler();
  if (m.live_bytes + bytes > m.limit) return nullptr;
  const size_t pg = m.page, want = (bytes == 0 ? 1 : bytes + 255) / 256 * 256;
  const size_t data = (want + pg - 1) / pg * pg;
  Region r;
  r.map_len = data + 2 * pg;
  void* p = mmap(nullptr, r.map_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  r.map = static_cast<char*>(p);
  r.base = r.map + pg + data - want;  // at the end: running off it hits the guard page
  r.bytes = bytes;
  r.device = device;
  protect(r, true);
  std::memset(r.map + pg, 0xff, data);
  if (m.guard) protect(r, false);
  m.live[reinterpret_cast<uintptr_t>(r.base)] = r;
  m.live_bytes += bytes;
  return r.base;
}

// False when p is not the start of a live block.
inline bool device_free(void* p) {
  Memory& m = memory();
  std::lock_guard<std::recursive_mutex> hold(m.lock);
  auto it = m.live.find(reinterpret_cast<uintptr_t>(p));
  if (it == m.live.end()) return false;
  for (int i = 0; i < m.n_opened; ++i)
    if (m.opened[i] == &it->second) m.opened[i--] = m.opened[--m.n_opened];
  munmap(it->second.map, it->second.map_len);
  m.live_bytes -= it->second.bytes;
  m.live.erase(it);
  return true;
}

}  // namespace tg_emu
