// tools/cuda_emu/tg_emu/device.h — what device code sees: the CUDA qualifiers (as no-ops or
// statics), threadIdx / blockIdx / blockDim / gridDim, barriers, warp shuffles and votes (through
// the scheduler in launch.h, which checks that they are reached uniformly), atomics, cp.async
// with its group semantics (the PTX rewrite_launches.py translates), and the CUDA math functions
// that the C library lacks. Add an intrinsic here when a cuda/*.cu file starts using it.
// Deliberately not modelled: atomics are plain read-modify-writes (threads never run at the same
// time), memory fences and volatile are no-ops, fast-math intrinsics (__expf, __fdividef) are the
// exact functions, __CUDA_ARCH__ is not defined (code under #ifdef __CUDA_ARCH__ is not used),
// float rounding follows the host compiler (it may fuse a*b+c like nvcc, but not in the same
// places).
#pragma once

#include <math.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "tg_emu/launch.h"

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
#define __constant__
#define __managed__
// Shared memory is a function (or namespace) static: one copy, used by one block at a time.
// `extern __shared__ T name[];` (dynamic shared memory) is rewritten by rewrite_launches.py into a
// pointer to tg_emu::dynamic_smem().
#define __shared__ static

#define threadIdx (static_cast<const uint3&>(::tg_emu::g_cur->idx))
#define blockIdx (static_cast<const uint3&>(::tg_emu::g_block_idx))
#define blockDim (static_cast<const dim3&>(::tg_emu::g_block_dim))
#define gridDim (static_cast<const dim3&>(::tg_emu::g_grid_dim))
constexpr int warpSize = 32;

namespace tg_emu {
// What rewrite_launches.py adds after each __shared__ declaration: the first thread of a block to
// get there fills the variable with 0xff bytes (NaN), so a read of shared memory that this block
// never wrote does not find the previous block's values. Outside a kernel (a __shared__ at
// namespace scope, initialised at program start) it does nothing.
template <typename T>
bool shared_poison(T& v) {
  if (!g_cur) return false;
  std::vector<void*>& seen = launch_state().poisoned;
  for (void* p : seen)
    if (p == &v) return true;
  seen.push_back(&v);
  launch_state().windows.push_back({reinterpret_cast<char*>(&v), sizeof v});
  if constexpr (std::is_trivially_copyable_v<T>)
    std::memset(static_cast<void*>(&v), 0xff, sizeof v);
  return true;
}
inline void* dynamic_smem() {
  Launch& l = launch_state();
  return l.dyn_smem.empty() ? nullptr : l.dyn_smem.data();
}
template <typename T>
uint64_t to_bits(T v) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>, "shuffles move up to 8 bytes");
  uint64_t u = 0;
  std::memcpy(&u, &v, sizeof(T));
  return u;
}
template <typename T>
T from_bits(uint64_t u) {
  T v;
  std::memcpy(&v, &u, sizeof(T));
  return v;
}
}  // namespace tg_emu

// ---- vector types (CUDA's sizes and alignments) ----
#define TG_EMU_VEC2(name, T, align) \
  struct alignas(align) name {      \
    T x, y;                         \
  };                                \
  inline name make_##name(T x, T y) { return {x, y}; }
#define TG_EMU_VEC4(name, T, align) \
  struct alignas(align) name {      \
    T x, y, z, w;                   \
  };                                \
  inline name make_##name(T x, T y, T z, T w) { return {x, y, z, w}; }
TG_EMU_VEC2(float2, float, 8)
TG_EMU_VEC4(float4, float, 16)
TG_EMU_VEC2(double2, double, 16)
TG_EMU_VEC4(double4, double, 16)
TG_EMU_VEC2(int2, int, 8)
TG_EMU_VEC4(int4, int, 16)
TG_EMU_VEC2(uint2, unsigned, 8)
TG_EMU_VEC4(uint4, unsigned, 16)
TG_EMU_VEC2(longlong2, long long, 16)
#undef TG_EMU_VEC2
#undef TG_EMU_VEC4
struct float3 {
  float x, y, z;
};
inline float3 make_float3(float x, float y, float z) { return {x, y, z}; }

// ---- block barriers ----
inline void __syncthreads(int line = __builtin_LINE(), const char* file = __builtin_FILE()) {
  tg_emu::collective(tg_emu::Wait::Block, tg_emu::Op::Sync, 0, 0, 32, 0, file, line);
}
inline int __syncthreads_or(int p, int line = __builtin_LINE(),
                            const char* file = __builtin_FILE()) {
  return int(
      tg_emu::collective(tg_emu::Wait::Block, tg_emu::Op::SyncOr, 0, 0, 32, p != 0, file, line));
}
inline int __syncthreads_and(int p, int line = __builtin_LINE(),
                             const char* file = __builtin_FILE()) {
  return int(
      tg_emu::collective(tg_emu::Wait::Block, tg_emu::Op::SyncAnd, 0, 0, 32, p != 0, file, line));
}
inline int __syncthreads_count(int p, int line = __builtin_LINE(),
                               const char* file = __builtin_FILE()) {
  return int(
      tg_emu::collective(tg_emu::Wait::Block, tg_emu::Op::SyncCount, 0, 0, 32, p != 0, file, line));
}
inline void __threadfence() {}
inline void __threadfence_block() {}

// ---- warp collectives ----
inline void __syncwarp(unsigned mask = 0xffffffffu, int line = __builtin_LINE(),
                       const char* file = __builtin_FILE()) {
  tg_emu::collective(tg_emu::Wait::Warp, tg_emu::Op::SyncWarp, mask, 0, 32, 0, file, line);
}
#define TG_EMU_SHUFFLE(fn, OP)                                                                    \
  template <typename T>                                                                           \
  T fn(unsigned mask, T v, int arg, int width = 32, int line = __builtin_LINE(),                  \
       const char* file = __builtin_FILE()) {                                                     \
    return tg_emu::from_bits<T>(tg_emu::collective(tg_emu::Wait::Warp, tg_emu::Op::OP, mask, arg, \
                                                   width, tg_emu::to_bits(v), file, line));       \
  }
TG_EMU_SHUFFLE(__shfl_sync, ShflIdx)
TG_EMU_SHUFFLE(__shfl_up_sync, ShflUp)
TG_EMU_SHUFFLE(__shfl_down_sync, ShflDown)
TG_EMU_SHUFFLE(__shfl_xor_sync, ShflXor)
#undef TG_EMU_SHUFFLE
inline unsigned __ballot_sync(unsigned mask, int p, int line = __builtin_LINE(),
                              const char* file = __builtin_FILE()) {
  return unsigned(
      tg_emu::collective(tg_emu::Wait::Warp, tg_emu::Op::Ballot, mask, 0, 32, p != 0, file, line));
}
inline int __any_sync(unsigned mask, int p, int line = __builtin_LINE(),
                      const char* file = __builtin_FILE()) {
  return int(
      tg_emu::collective(tg_emu::Wait::Warp, tg_emu::Op::Any, mask, 0, 32, p != 0, file, line));
}
inline int __all_sync(unsigned mask, int p, int line = __builtin_LINE(),
                      const char* file = __builtin_FILE()) {
  return int(
      tg_emu::collective(tg_emu::Wait::Warp, tg_emu::Op::All, mask, 0, 32, p != 0, file, line));
}
// The lanes of the caller's warp that have not exited (an approximation: the emulator does not
// track divergence inside a warp).
inline unsigned __activemask() {
  tg_emu::Launch& l = tg_emu::launch_state();
  const unsigned base = tg_emu::g_cur->lin & ~31u;
  unsigned m = 0;
  for (unsigned j = 0; j < 32 && base + j < l.nthreads; ++j)
    if (l.threads[base + j].wait != tg_emu::Wait::Done) m |= 1u << j;
  return m;
}

// ---- atomics (no two threads ever run at once, so plain read-modify-write is atomic) ----
#define TG_EMU_ATOMIC(fn, T, expr) \
  inline T fn(T* p, T v) {         \
    const T old = *p;              \
    *p = (expr);                   \
    return old;                    \
  }
#define TG_EMU_ATOMIC_INT(fn, expr)           \
  TG_EMU_ATOMIC(fn, int, expr)                \
  TG_EMU_ATOMIC(fn, unsigned, expr)           \
  TG_EMU_ATOMIC(fn, unsigned long long, expr) \
  TG_EMU_ATOMIC(fn, long long, expr)
TG_EMU_ATOMIC_INT(atomicAdd, old + v)
TG_EMU_ATOMIC(atomicAdd, float, old + v)
TG_EMU_ATOMIC(atomicAdd, double, old + v)
TG_EMU_ATOMIC_INT(atomicSub, old - v)
TG_EMU_ATOMIC_INT(atomicExch, v)
TG_EMU_ATOMIC(atomicExch, float, v)
TG_EMU_ATOMIC_INT(atomicMin, v < old ? v : old)
TG_EMU_ATOMIC_INT(atomicMax, v > old ? v : old)
TG_EMU_ATOMIC_INT(atomicAnd, old& v)
TG_EMU_ATOMIC_INT(atomicOr, old | v)
TG_EMU_ATOMIC_INT(atomicXor, old ^ v)
TG_EMU_ATOMIC(atomicInc, unsigned, old >= v ? 0u : old + 1)
TG_EMU_ATOMIC(atomicDec, unsigned, (old == 0 || old > v) ? v : old - 1)
#undef TG_EMU_ATOMIC_INT
#undef TG_EMU_ATOMIC
template <typename T>
T atomicCAS(T* p, T compare, T v) {
  static_assert(std::is_integral_v<T>, "atomicCAS on integers");
  const T old = *p;
  if (old == compare) *p = v;
  return old;
}

// ---- shared addresses and cp.async (the PTX that rewrite_launches.py translates) ----
// A generic pointer into shared memory as a 32-bit shared address (see Launch::windows).
inline size_t __cvta_generic_to_shared(const void* p) {
  const auto& w = tg_emu::launch_state().windows;
  const char* c = static_cast<const char*>(p);
  for (size_t i = 0; i < w.size(); ++i)
    if (c >= w[i].first && c < w[i].first + w[i].second)
      return (i + 1) << 24 | size_t(c - w[i].first);
  tg_emu::device_fail("__cvta_generic_to_shared: the pointer is not shared memory of this block");
}
namespace tg_emu {
inline char* shared_pointer(uint64_t a, int bytes) {
  const auto& w = launch_state().windows;
  const uint64_t i = (a >> 24) - 1, off = a & 0xffffff;
  if (a >> 24 == 0 || i >= w.size() || off + bytes > w[i].second)
    device_fail("cp.async: shared address 0x" + std::to_string(a) + " is outside shared memory");
  return w[i].first + off;
}
// cp.async.{ca,cg}.shared.global [dst], [src], bytes, src_bytes: recorded now, performed when a
// cp.async.wait_group covers its group, so data read before the wait is still the old (poisoned)
// shared memory, as the hardware allows.
inline void cp_async(uint64_t dst, const void* src, int bytes, int src_bytes) {
  if (bytes != 4 && bytes != 8 && bytes != 16)
    device_fail("cp.async: copy size " + std::to_string(bytes) + " is not 4, 8 or 16");
  char* d = shared_pointer(dst, bytes);
  if (reinterpret_cast<uintptr_t>(d) % bytes ||
      (src_bytes && reinterpret_cast<uintptr_t>(src) % bytes))
    device_fail("cp.async: a " + std::to_string(bytes) + "-byte copy needs aligned addresses");
  if (src_bytes < 0 || src_bytes > bytes) device_fail("cp.async: bad source size");
  g_cur->cp_pending.push_back({d, src, bytes, src_bytes, g_cur->committed});
}
inline void cp_async_commit() { ++g_cur->committed; }
// Completes every copy of the committed groups but the newest n (uncommitted copies wait).
inline void cp_async_wait(int n) {
  auto& q = g_cur->cp_pending;
  size_t kept = 0;
  for (const Thread::CpAsync& c : q) {
    if (c.group < g_cur->committed - n) {
      std::memcpy(c.dst, c.src, size_t(c.src_bytes));
      std::memset(static_cast<char*>(c.dst) + c.src_bytes, 0, size_t(c.bytes - c.src_bytes));
    } else {
      q[kept++] = c;
    }
  }
  q.resize(kept);
}
}  // namespace tg_emu

// ---- integer and bit intrinsics ----
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x ? __builtin_clz(unsigned(x)) : 32; }
inline int __clzll(long long x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned __brev(unsigned x) {
  unsigned r = 0;
  for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i);
  return r;
}
inline unsigned __umulhi(unsigned a, unsigned b) { return unsigned((uint64_t(a) * b) >> 32); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
  return static_cast<unsigned long long>((static_cast<unsigned __int128>(a) * b) >> 64);
}
inline float __int_as_float(int x) { return tg_emu::from_bits<float>(uint32_t(x)); }
inline int __float_as_int(float x) { return int(uint32_t(tg_emu::to_bits(x))); }
inline float __uint_as_float(unsigned x) { return tg_emu::from_bits<float>(x); }
inline unsigned __float_as_uint(float x) { return unsigned(tg_emu::to_bits(x)); }
inline double __longlong_as_double(long long x) { return tg_emu::from_bits<double>(uint64_t(x)); }
inline long long __double_as_longlong(double x) { return (long long)tg_emu::to_bits(x); }
inline long long clock64() { return std::chrono::steady_clock::now().time_since_epoch().count(); }
inline void __nanosleep(unsigned) {}
template <typename T>
T __ldg(const T* p) {
  return *p;
}

// ---- math the C library does not have (or has under other names) ----
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float rsqrt(float x) { return rsqrtf(x); }
inline float __expf(float x) { return expf(x); }
inline float __logf(float x) { return logf(x); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __tanhf(float x) { return tanhf(x); }
inline float __powf(float x, float y) { return powf(x, y); }
inline float __fdividef(float x, float y) { return x / y; }
inline float fdividef(float x, float y) { return x / y; }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return sqrtf(x); }
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline double __fma_rn(double a, double b, double c) { return fma(a, b, c); }
inline float __saturatef(float x) { return x != x ? 0.0f : x < 0 ? 0.0f : x > 1 ? 1.0f : x; }
inline float normcdff(float x) { return 0.5f * erfcf(-x * 0.70710678118654752f); }
inline double normcdf(double x) { return 0.5 * erfc(-x * 0.70710678118654752440); }
inline int __float2int_rn(float x) { return int(nearbyintf(x)); }
inline int __float2int_rz(float x) { return int(x); }
inline int __double2int_rn(double x) { return int(nearbyint(x)); }
inline float __double2float_rn(double x) { return float(x); }
inline float __int2float_rn(int x) { return float(x); }

// CUDA's min / max: any pair of arithmetic types, in their common type; floats as fmin / fmax
// (a NaN operand gives the other one).
template <typename A, typename B,
          typename = std::enable_if_t<std::is_arithmetic_v<A> && std::is_arithmetic_v<B>>>
std::common_type_t<A, B> min(A a, B b) {
  using C = std::common_type_t<A, B>;
  if constexpr (std::is_floating_point_v<C>)
    return fmin(C(a), C(b));
  else
    return C(b) < C(a) ? C(b) : C(a);
}
template <typename A, typename B,
          typename = std::enable_if_t<std::is_arithmetic_v<A> && std::is_arithmetic_v<B>>>
std::common_type_t<A, B> max(A a, B b) {
  using C = std::common_type_t<A, B>;
  if constexpr (std::is_floating_point_v<C>)
    return fmax(C(a), C(b));
  else
    return C(a) < C(b) ? C(b) : C(a);
}
