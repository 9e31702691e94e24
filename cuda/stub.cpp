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
void copy_on_device(void*, const void*, size_t, int) { no_cuda("copy_on_device"); }
void copy_between_devices(void*, int, const void*, int, size_t) { no_cuda("copy_between_devices"); }
void memset_zero(void*, size_t, int) { no_cuda("memset_zero"); }
int saxpy_host(int, float, const float*, float*) { return 100; }  // cudaErrorNoDevice

void binary(BinOp, DT, DT, void*, const void*, const void*, const Strided&) { no_cuda("binary"); }
void unary(UnOp, DT, void*, const void*, int64_t, double, double) { no_cuda("unary"); }
void unary_backward(UnOp, DT, void*, const void*, const void*, const void*, int64_t, double,
                    double) {
  no_cuda("unary_backward");
}
void where(DT, void*, const bool*, const int64_t*, int64_t, const void*, const void*,
           const Strided&) {
  no_cuda("where");
}
void logical_not(bool*, const bool*, int64_t) { no_cuda("logical_not"); }
void fill(DT, void*, int64_t, double) { no_cuda("fill"); }
void cast(DT, DT, void*, const void*, int64_t) { no_cuda("cast"); }
void strided_copy(DT, void*, const void*, const Strided&) { no_cuda("strided_copy"); }
void index_select(DT, void*, const void*, const int64_t*, int64_t, int64_t, int64_t, int64_t) {
  no_cuda("index_select");
}
void index_add(DT, void*, const void*, const int64_t*, int64_t, int64_t, int64_t, int64_t, bool) {
  no_cuda("index_add");
}
int64_t first_out_of_range(const int64_t*, int64_t, int64_t, int64_t) {
  no_cuda("first_out_of_range");
}
void reduce(RedOp, DT, void*, const void*, int64_t, int64_t, int64_t) { no_cuda("reduce"); }
void argmax(DT, int64_t*, const void*, int64_t, int64_t, int64_t) { no_cuda("argmax"); }
void sum_squares(DT, double*, const void*, int64_t) { no_cuda("sum_squares"); }
void gemm(DT, bool, bool, int64_t, int64_t, int64_t, double, const void*, int64_t, int64_t,
          const void*, int64_t, int64_t, double, void*, int64_t, int64_t, int64_t) {
  no_cuda("gemm");
}
void set_allow_tf32(bool) {}
bool allow_tf32() { return false; }
void softmax_forward(DT, void*, const void*, int64_t, int64_t, int64_t, bool) {
  no_cuda("softmax_forward");
}
void softmax_backward(DT, void*, const void*, const void*, int64_t, int64_t, int64_t, bool) {
  no_cuda("softmax_backward");
}
void layer_norm_forward(DT, void*, double*, double*, const void*, const void*, const void*, int64_t,
                        int64_t, double) {
  no_cuda("layer_norm_forward");
}
void layer_norm_backward(DT, void*, void*, void*, const void*, const void*, const void*,
                         const double*, const double*, int64_t, int64_t) {
  no_cuda("layer_norm_backward");
}
void cross_entropy_forward(DT, double*, double*, const void*, const int64_t*, int64_t, int64_t,
                           int64_t, int64_t, double, int64_t*) {
  no_cuda("cross_entropy_forward");
}
void cross_entropy_backward(DT, void*, const double*, double, const void*, const int64_t*,
                            const double*, int64_t, int64_t, int64_t, int64_t, double) {
  no_cuda("cross_entropy_backward");
}
void dropout_forward(DT, void*, void*, const void*, int64_t, double, uint64_t, uint64_t) {
  no_cuda("dropout_forward");
}
double dropout_uniform_host(uint64_t, uint64_t, int64_t) { no_cuda("dropout_uniform_host"); }
void adam_step(DT, void*, const void*, void*, void*, void*, int64_t, double, double, double, double,
               double, bool, bool, double, double) {
  no_cuda("adam_step");
}
void attention_forward(DT, void*, void*, const void*, const void*, const void*, int64_t, int64_t,
                       int64_t, int64_t, int64_t, int64_t, double, const MaskDesc&) {
  no_cuda("attention_forward");
}
void attention_backward(DT, void*, void*, void*, const void*, const void*, const void*, const void*,
                        const void*, const void*, int64_t, int64_t, int64_t, int64_t, int64_t,
                        int64_t, double, const MaskDesc&) {
  no_cuda("attention_backward");
}

}  // namespace tg::cuda
