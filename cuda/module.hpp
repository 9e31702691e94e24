// cuda/module.hpp — the one symbol libtapegrad_cuda.so exports: a table of function pointers to
// every kernel and runtime call (cuda/module_api.inc). The core library never links the CUDA
// libraries; cuda/loader.cpp dlopens the module on the first CUDA call and calls through the
// table, so a CPU-only program maps neither libcudart nor cuBLAS. No CUDA headers here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "cuda/kernels.cuh"
#include "cuda/runtime.cuh"

namespace tg::cuda {

// Bumped whenever module_api.inc or a type it names changes: a module of another version is
// refused at load with both numbers in the message.
constexpr int kModuleAbi = 9;

// What the loader hands the module: the op name its error messages start with (OpScope lives in
// the core, so the module asks for it).
struct ModuleHost {
  const char* (*current_op)();
};

struct ModuleTable {
  int abi;
  size_t size;  // sizeof(ModuleTable) as the module was compiled
  bool has_nccl;
#define TG_CUDA_FN(ret, name, params, args) ret(*name) params;
#define TG_NCCL_FN(ret, name, params, args) ret(*nccl_##name) params;
#define TG_CUDA_SOFT(ret, name, params, args, value) TG_CUDA_FN(ret, name, params, args)
#include "cuda/module_api.inc"
#undef TG_CUDA_SOFT
#undef TG_CUDA_FN
#undef TG_NCCL_FN
};

}  // namespace tg::cuda

// The module's entry point (dlsym name "tg_cuda_module").
extern "C" const tg::cuda::ModuleTable* tg_cuda_module(const tg::cuda::ModuleHost* host);
