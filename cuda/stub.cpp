// cuda/stub.cpp — the CUDA face (runtime.cuh, kernels.cuh) for builds without the CUDA toolkit:
// no devices, and every call that would need one throws tg::cuda::Error saying how to get a CUDA
// build. The library's device dispatch compiles and links the same way with or without CUDA.
#include "cuda/kernels.cuh"
#include "cuda/runtime.cuh"

namespace tg::cuda {

namespace {
[[noreturn]] void no_cuda(const char* what) {
  throw Error(std::string(current_op()) + ": " + what +
              " needs CUDA, but this tapegrad was built without it (install the CUDA toolkit so "
              "that nvcc is on PATH, then configure with -DTG_CUDA=ON)");
}
thread_local const char* g_op = nullptr;
}  // namespace

bool built_with_cuda() { return false; }
const char* unavailable_reason() {
  return "this build has no CUDA (configure with nvcc on PATH, -DTG_CUDA=ON)";
}
int device_count() { return 0; }
const char* device_name(int) { return ""; }
const char* current_op() { return g_op ? g_op : "cuda"; }
OpScope::OpScope(const char* op) : prev_(g_op) { g_op = op; }
OpScope::~OpScope() { g_op = prev_; }
void set_device(int) { no_cuda("set_device"); }
int current_device() { return 0; }
void* stream() { no_cuda("stream"); }
void synchronize(int) { no_cuda("synchronize"); }
void* alloc(size_t, int) { no_cuda("allocating device memory"); }
void free(void*, int) {}
MemoryStats memory_stats(int) { no_cuda("memory_stats"); }
void reset_peak_memory(int) { no_cuda("reset_peak_memory"); }
void empty_cache(int) { no_cuda("empty_cache"); }
void copy_to_device(void*, const void*, size_t, int) { no_cuda("copy_to_device"); }
void copy_to_host(void*, const void*, size_t, int) { no_cuda("copy_to_host"); }
void copy_between_devices(void*, int, const void*, int, size_t) { no_cuda("copy_between_devices"); }
int saxpy_host(int, float, const float*, float*) { return 100; }  // cudaErrorNoDevice

void set_allow_tf32(bool) {}
bool allow_tf32() { return false; }
double dropout_uniform_host(uint64_t, uint64_t, int64_t) { no_cuda("dropout_uniform_host"); }

// Every kernel of the list (ops/kern/kernel_list.inc) throws.
#define TG_KERNEL(name, params, args) \
  void name params { no_cuda(#name); }
#define TG_CUDA_KERNEL(ret, name, params, args) \
  ret name params { no_cuda(#name); }
#include "ops/kern/kernel_list.inc"
#undef TG_CUDA_KERNEL
#undef TG_KERNEL

}  // namespace tg::cuda
