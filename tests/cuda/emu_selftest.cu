// tests/cuda/emu_selftest.cu — the host CUDA emulator's own test (TG_CUDA_EMU builds only; CMake
// rewrites the launches like cuda/*.cu). Correct kernels give CUDA's results (shuffles, votes,
// barriers, dynamic shared memory, cuBLAS, CUB), and the faults the emulator exists to catch are
// caught: divergent or partial barriers, warp collectives at different call sites, a missing
// barrier (the shuffled thread order exposes it), bad launch configurations, dynamic shared memory
// without the opt-in, copies of the wrong kind, a kernel running off its buffer. On a GPU several
// of these kernels would hang; this file is not meant for nvcc.
#include <cublas_v2.h>
#include <cub/cub.cuh>
#include <cuda_runtime.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

int g_failures = 0;
// The child died of the fault: SIGSEGV, or a sanitizer's report and exit code (its handler
// comes after ours).
bool died_of_fault(int status) {
  // With ASAN_OPTIONS=abort_on_error=1 the sanitizer's handler ends the child with SIGABRT.
  return WIFSIGNALED(status) ? (WTERMSIG(status) == SIGSEGV || WTERMSIG(status) == SIGABRT)
                             : WEXITSTATUS(status) != 0;
}
void expect(const char* what, bool ok) {
  std::printf("%s %s\n", ok ? "ok  " : "FAIL", what);
  g_failures += !ok;
}
// The launch failed with code e, and (for launch failures) the emulator's message holds `text`.
void expect_error(const char* what, cudaError_t e, const char* text = "") {
  const cudaError_t got = cudaGetLastError();
  const std::string msg = cudaGetErrorString(got);
  const bool ok = got == e && msg.find(text) != std::string::npos;
  if (!ok) std::printf("     got %s: %s\n", cudaGetErrorName(got), msg.c_str());
  expect(what, ok);
}

template <typename T>
T* to_device(const std::vector<T>& h) {
  T* p = nullptr;
  cudaMalloc(&p, h.size() * sizeof(T));
  cudaMemcpy(p, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice);
  return p;
}
template <typename T>
std::vector<T> to_host(const T* p, size_t n) {
  std::vector<T> h(n);
  cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost);
  return h;
}

// ---- correct kernels ----
// Per lane of one 32-thread block: shuffles and votes.
__global__ void warp_ops_kernel(int* out) {
  const int lane = threadIdx.x;
  out[0 * 32 + lane] = __shfl_xor_sync(0xffffffffu, lane * 10, 1);
  out[1 * 32 + lane] = __shfl_down_sync(0xffffffffu, lane, 3);
  out[2 * 32 + lane] = __shfl_up_sync(0xffffffffu, lane, 2);
  out[3 * 32 + lane] = __shfl_sync(0xffffffffu, lane, 5, 16);  // lane 5 of each half
  out[4 * 32 + lane] = int(__ballot_sync(0xffffffffu, lane % 3 == 0));
  out[5 * 32 + lane] = __any_sync(0xffffffffu, lane == 31) + 2 * __all_sync(0xffffffffu, lane < 31);
  // Only the low half takes part: a partial mask.
  if (lane < 16) out[6 * 32 + lane] = __shfl_xor_sync(0x0000ffffu, lane, 8);
}

// Block sum through shared memory, with the barrier: every thread gets the total.
__global__ void block_sum_kernel(int* out, int n) {
  __shared__ int s[256];
  s[threadIdx.x] = threadIdx.x;
  __syncthreads();
  int total = 0;
  for (int i = 0; i < n; ++i) total += s[i];
  out[blockIdx.x * blockDim.x + threadIdx.x] = total + __syncthreads_count(threadIdx.x % 2);
}

// Dynamic shared memory: reversed within the block.
__global__ void reverse_kernel(float* out, const float* x) {
  extern __shared__ __align__(16) float buf[];
  const int t = threadIdx.x, n = blockDim.x;
  buf[t] = x[blockIdx.x * n + t];
  __syncthreads();
  out[blockIdx.x * n + t] = buf[n - 1 - t];
}

// cp.async (inline PTX, as cuda/attention.cu writes it): two groups of copies into dynamic
// shared memory; out records what thread t sees before any wait, after wait_group 1 (the first
// group only) and after wait_group 0.
__device__ void copy_async(float* dst, const float* src) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(s), "l"(src), "n"(4), "r"(4)
               : "memory");
}
__global__ void cp_async_kernel(float* out, const float* x) {
  extern __shared__ float sm[];
  const int t = threadIdx.x;
  copy_async(sm + t, x + t);
  asm volatile("cp.async.commit_group;\n" ::: "memory");
  copy_async(sm + 32 + t, x + 32 + t);
  asm volatile("cp.async.commit_group;\n" ::: "memory");
  out[t] = sm[t];
  asm volatile("cp.async.wait_group %0;\n" ::"n"(1) : "memory");
  out[32 + t] = sm[t];
  out[64 + t] = sm[32 + t];
  asm volatile("cp.async.wait_group 0;\n" ::: "memory");
  out[96 + t] = sm[32 + t];
}

template <typename T>
__global__ void fill_kernel(T* out, T v) {
  out[threadIdx.x] = v;
}

// ---- faulty kernels ----
__global__ void early_exit_then_barrier(int* out) {
  if (threadIdx.x >= 200) return;
  __syncthreads();
  out[threadIdx.x] = 1;
}
__global__ void barriers_at_two_sites(int* out) {
  if (threadIdx.x < 64)
    __syncthreads();
  else
    __syncthreads();
  out[threadIdx.x] = 1;
}
__global__ void shuffles_at_two_sites(int* out) {
  int v = threadIdx.x;
  if (threadIdx.x % 2)
    v = __shfl_xor_sync(0xffffffffu, v, 1);
  else
    v = __shfl_xor_sync(0xffffffffu, v, 2);
  out[threadIdx.x] = v;
}
__global__ void missing_barrier(int* out) {
  __shared__ int s[128];
  s[threadIdx.x] = int(threadIdx.x) + 1000 * int(blockIdx.x);
  // __syncthreads() belongs here
  out[blockIdx.x * 128 + threadIdx.x] = s[(threadIdx.x + 1) % 128];
}
// Only block 0 fills s: block 1 must not see block 0's values.
__global__ void shared_from_block_zero(float* out) {
  __shared__ float s[64];
  if (blockIdx.x == 0) s[threadIdx.x] = float(threadIdx.x);
  __syncthreads();
  out[blockIdx.x * 64 + threadIdx.x] = s[threadIdx.x];
}
__global__ void off_the_end(float* out, int n) {
  out[n + threadIdx.x] = 1;  // just past the block: its guard page
}

void correct_kernels() {
  int* w = nullptr;
  cudaMalloc(&w, 7 * 32 * sizeof(int));
  cudaMemset(w, 0, 7 * 32 * sizeof(int));
  warp_ops_kernel<<<1, 32>>>(w);
  expect_error("warp ops launch", cudaSuccess);
  const std::vector<int> r = to_host(w, 7 * 32);
  bool ok = true;
  unsigned ballot = 0;
  for (int l = 0; l < 32; l += 3) ballot |= 1u << l;
  for (int l = 0; l < 32; ++l) {
    ok = ok && r[0 * 32 + l] == (l ^ 1) * 10;
    ok = ok && r[1 * 32 + l] == (l + 3 < 32 ? l + 3 : l);
    ok = ok && r[2 * 32 + l] == (l >= 2 ? l - 2 : l);
    ok = ok && r[3 * 32 + l] == (l < 16 ? 5 : 21);
    ok = ok && unsigned(r[4 * 32 + l]) == ballot;
    ok = ok && r[5 * 32 + l] == 1;  // any: yes; all lanes < 31: no
    ok = ok && r[6 * 32 + l] == (l < 16 ? l ^ 8 : 0);
  }
  expect("shuffles (xor, down, up, idx with width 16, partial mask), ballot, any, all", ok);
  cudaFree(w);

  int* s = nullptr;
  cudaMalloc(&s, 3 * 256 * sizeof(int));
  block_sum_kernel<<<3, 256>>>(s, 256);
  expect_error("block sum launch", cudaSuccess);
  const std::vector<int> sums = to_host(s, 3 * 256);
  bool all = true;
  for (int v : sums) all = all && v == 255 * 256 / 2 + 128;
  expect("__syncthreads and __syncthreads_count: every thread sees the block's writes", all);
  cudaFree(s);

  std::vector<float> x(4 * 128);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i);
  float* dx = to_device(x);
  float* dy = nullptr;
  cudaMalloc(&dy, x.size() * sizeof(float));
  reverse_kernel<<<4, 128, 128 * sizeof(float)>>>(dy, dx);
  expect_error("dynamic shared memory launch", cudaSuccess);
  const std::vector<float> y = to_host(dy, x.size());
  bool rev = true;
  for (int b = 0; b < 4; ++b)
    for (int t = 0; t < 128; ++t) rev = rev && y[b * 128 + t] == x[b * 128 + 127 - t];
  expect("extern __shared__ buffer (rewritten to the launch's dynamic shared memory)", rev);
  reverse_kernel<<<1, 128, 64 << 10>>>(dy, dx);
  expect_error("64 KiB of dynamic shared memory without the opt-in is refused",
               cudaErrorInvalidValue);
  cudaFuncSetAttribute(reverse_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 << 10);
  reverse_kernel<<<1, 128, 64 << 10>>>(dy, dx);
  expect_error("... and accepted after cudaFuncSetAttribute", cudaSuccess);
  cudaFree(dx);
  cudaFree(dy);

  std::vector<float> src(64);
  for (int i = 0; i < 64; ++i) src[i] = float(i);
  float* dsrc = to_device(src);
  float* dout = nullptr;
  cudaMalloc(&dout, 128 * sizeof(float));
  cp_async_kernel<<<1, 32, 64 * sizeof(float)>>>(dout, dsrc);
  expect_error("cp.async launch", cudaSuccess);
  const std::vector<float> seen = to_host(dout, 128);
  bool async_ok = true;
  for (int t = 0; t < 32; ++t)
    async_ok = async_ok && std::isnan(seen[t]) && seen[32 + t] == float(t) &&
               std::isnan(seen[64 + t]) && seen[96 + t] == float(32 + t);
  expect("cp.async lands only at the wait_group that covers its group", async_ok);
  cudaFree(dsrc);
  cudaFree(dout);
}

void launch_checks() {
  int* d = nullptr;
  cudaMalloc(&d, 1024 * sizeof(int));
  fill_kernel<int><<<1, 2048>>>(d, 1);
  expect_error("a 2048-thread block is an invalid configuration", cudaErrorInvalidConfiguration);
  fill_kernel<int><<<0, 32>>>(d, 1);
  expect_error("an empty grid is an invalid configuration", cudaErrorInvalidConfiguration);
  std::vector<int> h(4);
  expect("cudaMemcpy HostToDevice with a host destination fails",
         cudaMemcpy(h.data(), h.data() + 1, 4, cudaMemcpyHostToDevice) == cudaErrorInvalidValue);
  cudaGetLastError();
  expect("cudaMemcpy past the end of a device block fails",
         cudaMemcpy(h.data(), d + 1023, 8, cudaMemcpyDeviceToHost) == cudaErrorInvalidValue);
  cudaGetLastError();
  cudaFree(d);
}

void faults_are_caught() {
  int* d = nullptr;
  cudaMalloc(&d, 256 * sizeof(int));
  early_exit_then_barrier<<<1, 256>>>(d);
  expect_error("__syncthreads after some threads returned", cudaErrorLaunchFailure, "exited");
  barriers_at_two_sites<<<1, 128>>>(d);
  expect_error("__syncthreads at two call sites", cudaErrorLaunchFailure, "divergent barriers");
  shuffles_at_two_sites<<<1, 32>>>(d);
  expect_error("a warp's lanes at two different shuffles", cudaErrorLaunchFailure, "deadlock");
  cudaFree(d);

  int* r = nullptr;
  cudaMalloc(&r, 2 * 128 * sizeof(int));
  missing_barrier<<<2, 128>>>(r);
  expect_error("missing barrier launch", cudaSuccess);
  const std::vector<int> got = to_host(r, 2 * 128);
  int wrong = 0;
  for (int b = 0; b < 2; ++b)
    for (int t = 0; t < 128; ++t) wrong += got[b * 128 + t] != (t + 1) % 128 + 1000 * b;
  expect("a missing __syncthreads gives wrong reads under the shuffled thread order", wrong > 0);
  cudaFree(r);

  float* sh = nullptr;
  cudaMalloc(&sh, 2 * 64 * sizeof(float));
  shared_from_block_zero<<<2, 64>>>(sh);
  const std::vector<float> shv = to_host(sh, 2 * 64);
  bool fresh = true;
  for (int t = 0; t < 64; ++t) fresh = fresh && shv[t] == float(t) && std::isnan(shv[64 + t]);
  expect("__shared__ memory a block never wrote reads NaN, not the previous block's values", fresh);
  cudaFree(sh);

  // A kernel running off its buffer dies with SIGSEGV (in a child process).
  float* f = nullptr;
  cudaMalloc(&f, 128 * sizeof(float));  // 512 bytes: the guard page follows at once
  std::fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) {
    std::fclose(stderr);
    off_the_end<<<1, 4>>>(f, 128);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  expect("a kernel writing past its device block faults (SIGSEGV)", died_of_fault(status));
  cudaFree(f);
}

void cublas_and_cub() {
  cublasHandle_t h = nullptr;
  cublasCreate(&h);
  // Column-major C (2, 2) = A (2, 3) · B (3, 2), with C full of NaN and beta = 0.
  const std::vector<float> A = {1, 2, 3, 4, 5, 6}, B = {1, 0, 1, 0, 1, 1};
  float* dA = to_device(A);
  float* dB = to_device(B);
  float* dC = to_device(std::vector<float>(4, NAN));
  const float one = 1, zero = 0;
  const cublasStatus_t st = cublasGemmStridedBatchedEx(
      h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 3, &one, dA, CUDA_R_32F, 2, 6, dB, CUDA_R_32F, 3, 6, &zero,
      dC, CUDA_R_32F, 2, 4, 1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  const std::vector<float> C = to_host(dC, 4);
  expect("cuBLAS GEMM, column-major, beta 0 ignores NaN in C",
         st == CUBLAS_STATUS_SUCCESS && C == std::vector<float>({6, 8, 8, 10}));
  expect("cuBLAS rejects lda < m", cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 3, &one, dA, 1,
                                               dB, 3, &zero, dC, 2) == CUBLAS_STATUS_INVALID_VALUE);
  cudaFree(dA);
  cudaFree(dB);
  cudaFree(dC);
  cublasDestroy(h);

  const std::vector<uint64_t> keys = {5, 1, 5, 0, 1, 5};
  const std::vector<int64_t> vals = {0, 1, 2, 3, 4, 5};
  uint64_t* k_in = to_device(keys);
  int64_t* v_in = to_device(vals);
  uint64_t* k_out = nullptr;
  int64_t* v_out = nullptr;
  cudaMalloc(&k_out, 6 * sizeof(uint64_t));
  cudaMalloc(&v_out, 6 * sizeof(int64_t));
  size_t bytes = 0;
  cub::DeviceRadixSort::SortPairs(nullptr, bytes, k_in, k_out, v_in, v_out, 6, 0, 3);
  void* temp = nullptr;
  cudaMalloc(&temp, bytes);
  size_t short_bytes = bytes - 1;
  expect("cub SortPairs refuses less temp storage than it asked for",
         cub::DeviceRadixSort::SortPairs(temp, short_bytes, k_in, k_out, v_in, v_out, 6, 0, 3) ==
             cudaErrorInvalidValue);
  cudaGetLastError();
  cub::DeviceRadixSort::SortPairs(temp, bytes, k_in, k_out, v_in, v_out, 6, 0, 3);
  expect("cub SortPairs is a stable sort by key",
         to_host(k_out, 6) == std::vector<uint64_t>({0, 1, 1, 5, 5, 5}) &&
             to_host(v_out, 6) == std::vector<int64_t>({3, 1, 4, 0, 2, 5}));
  cudaFree(k_in);
  cudaFree(v_in);
  cudaFree(k_out);
  cudaFree(v_out);
  cudaFree(temp);
}

}  // namespace

int main() {
  correct_kernels();
  launch_checks();
  faults_are_caught();
  cublas_and_cub();
  std::printf("%s: %d failure%s\n", g_failures ? "FAILED" : "passed", g_failures,
              g_failures == 1 ? "" : "s");
  return g_failures ? 1 : 0;
}
