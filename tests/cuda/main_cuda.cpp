// tests/cuda/main_cuda.cpp — the CUDA suites' entry point: without a CUDA device (no GPU, no
// driver, or a build without CUDA) the whole executable reports "skipped" to ctest (exit 77,
// SKIP_RETURN_CODE), never a silent pass. The GPU's bfloat16 attention multiplies in float32, so
// the CPU it is compared with does too (TG_ATTENTION_BF16=float32: ops/attention/cpu/bf16.hpp).
#include "run_catch.hpp"

#include "autograd/tensor.hpp"
#include "ops/attention/cpu/bf16.hpp"

#include <cstdio>

int main(int argc, char** argv) {
  if (tg::cuda_device_count() == 0) {
    std::printf("no CUDA device: the GPU suites are skipped\n");
    return 77;
  }
  tg::cpu::set_attention_bf16(tg::cpu::AttentionBf16::Float32);
  return tg_test::run_catch(argc, argv);
}
