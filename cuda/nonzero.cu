// cuda/nonzero.cu — nonzero on the GPU (ops/shape/diagonal.cpp is the spec and the CPU's loop its
// twin): the coordinates of the true entries of a contiguous bool mask, in row-major order,
// without copying the data to the host. Three passes over chunks of kern::kNonzeroChunk elements:
//   nonzero_count_kernel    a block per chunk counts its true entries;
//   nonzero_offsets_kernel  one block turns the counts into exclusive offsets and the total
//                           (read back by the host: the output's size, as PyTorch's nonzero
//                           synchronises);
//   nonzero_write_kernel    a block per chunk ranks its entries by a block scan (each thread
//                           owns kPer consecutive elements) and writes each one's coordinates at
//                           offset + rank.
// Every entry's place follows from counts alone: deterministic, no atomics.
#include "cuda/check.cuh"

namespace tg::cuda {

namespace {

constexpr int kThreads = 256;
constexpr int kPer = static_cast<int>(kern::kNonzeroChunk) / kThreads;
static_assert(kern::kNonzeroChunk % kThreads == 0, "a chunk is whole threads' runs");

// Exclusive prefix sum of v over the block (Hillis-Steele in sh, kThreads entries); *total gets
// the block's sum. Every thread must call it; sh is free again on return.
template <typename I>
__device__ I block_exclusive_scan(I v, I* sh, I* total) {
  const int t = threadIdx.x;
  sh[t] = v;
  __syncthreads();
  for (int off = 1; off < kThreads; off <<= 1) {
    const I add = t >= off ? sh[t - off] : I(0);
    __syncthreads();
    sh[t] += add;
    __syncthreads();
  }
  *total = sh[kThreads - 1];
  const I inclusive = sh[t];
  __syncthreads();
  return inclusive - v;
}

// This thread's true entries among its kPer elements of chunk c.
__device__ int thread_count(const bool* m, int64_t n, int64_t c) {
  const int64_t e0 = c * kern::kNonzeroChunk + static_cast<int64_t>(threadIdx.x) * kPer;
  int k = 0;
  for (int r = 0; r < kPer; ++r) k += e0 + r < n && m[e0 + r] ? 1 : 0;
  return k;
}

__global__ void nonzero_count_kernel(int64_t* counts, const bool* m, int64_t n, int64_t chunks) {
  __shared__ int sh[kThreads];
  for (int64_t c = blockIdx.x; c < chunks; c += gridDim.x) {
    int total = 0;
    block_exclusive_scan(thread_count(m, n, c), sh, &total);
    if (threadIdx.x == 0) counts[c] = total;
  }
}

// off[0, chunks) holds the counts and becomes their exclusive prefix sums; off[chunks] = total.
// Thread t owns a contiguous stripe of chunks.
__global__ void nonzero_offsets_kernel(int64_t* off, int64_t chunks) {
  __shared__ int64_t sh[kThreads];
  const int64_t per = (chunks + kThreads - 1) / kThreads;
  const int64_t a = threadIdx.x * per, e = a + per < chunks ? a + per : chunks;
  int64_t s = 0;
  for (int64_t k = a; k < e; ++k) s += off[k];
  int64_t total = 0;
  int64_t base = block_exclusive_scan(s, sh, &total);
  for (int64_t k = a; k < e; ++k) {
    const int64_t c = off[k];
    off[k] = base;
    base += c;
  }
  if (threadIdx.x == 0) off[chunks] = total;
}

// out (total, st.ndim) int64: entry e's coordinates (st.shape, row-major) at row off[chunk] + rank.
__global__ void nonzero_write_kernel(int64_t* out, const bool* m, int64_t n, const int64_t* off,
                                     int64_t chunks, Strided st) {
  __shared__ int sh[kThreads];
  const int nd = st.ndim;
  for (int64_t c = blockIdx.x; c < chunks; c += gridDim.x) {
    int total = 0;
    int64_t at = off[c] + block_exclusive_scan(thread_count(m, n, c), sh, &total);
    const int64_t e0 = c * kern::kNonzeroChunk + static_cast<int64_t>(threadIdx.x) * kPer;
    for (int r = 0; r < kPer; ++r) {
      const int64_t e = e0 + r;
      if (e >= n || !m[e]) continue;
      int64_t rest = e;
      for (int k = nd - 1; k >= 0; --k) {
        out[at * nd + k] = rest % st.shape[k];
        rest /= st.shape[k];
      }
      ++at;
    }
  }
}

// Blocks for a grid-stride loop over chunks.
unsigned chunk_blocks(int64_t chunks) {
  return static_cast<unsigned>(chunks < 65535 ? chunks : 65535);
}

}  // namespace

int64_t nonzero_count(const bool* mask, int64_t n, int64_t* offsets) {
  if (n <= 0) return 0;
  const int64_t chunks = (n + kern::kNonzeroChunk - 1) / kern::kNonzeroChunk;
  cudaStream_t s = detail::cur_stream();
  nonzero_count_kernel<<<chunk_blocks(chunks), kThreads, 0, s>>>(offsets, mask, n, chunks);
  TG_CUDA_LAUNCH_CHECK("nonzero_count_kernel");
  nonzero_offsets_kernel<<<1, kThreads, 0, s>>>(offsets, chunks);
  TG_CUDA_LAUNCH_CHECK("nonzero_offsets_kernel");
  int64_t total = 0;
  copy_to_host(&total, offsets + chunks, sizeof total, current_device());  // waits for both
  return total;
}

void nonzero_write(int64_t* out, const bool* mask, int64_t n, const int64_t* offsets,
                   const Strided& st) {
  if (n <= 0) return;
  const int64_t chunks = (n + kern::kNonzeroChunk - 1) / kern::kNonzeroChunk;
  nonzero_write_kernel<<<chunk_blocks(chunks), kThreads, 0, detail::cur_stream()>>>(
      out, mask, n, offsets, chunks, st);
  TG_CUDA_LAUNCH_CHECK("nonzero_write_kernel");
}

}  // namespace tg::cuda
