// cuda/module.cpp — the entry point of libtapegrad_cuda.so: fills the table of cuda/module.hpp
// from the kernels (cuda/*.cu) and the NCCL calls, and answers current_op() with the core's op
// name. Every other symbol of the module is local (cuda/module.map).
#include "cuda/module.hpp"

#include "cuda/nccl.hpp"

namespace tg::cuda {
namespace {
const ModuleHost* g_host = nullptr;
}
const char* current_op() { return g_host && g_host->current_op ? g_host->current_op() : "cuda"; }
}  // namespace tg::cuda

extern "C" __attribute__((visibility("default"))) const tg::cuda::ModuleTable* tg_cuda_module(
    const tg::cuda::ModuleHost* host) {
  using namespace tg::cuda;
  static const ModuleTable table = [] {
    ModuleTable t{};
    t.abi = kModuleAbi;
    t.size = sizeof(ModuleTable);
    t.has_nccl = nccl::built();
#define TG_CUDA_FN(ret, name, params, args) t.name = &tg::cuda::name;
#define TG_NCCL_FN(ret, name, params, args) t.nccl_##name = &tg::cuda::nccl::name;
#define TG_CUDA_SOFT(ret, name, params, args, value) TG_CUDA_FN(ret, name, params, args)
#include "cuda/module_api.inc"
#undef TG_CUDA_SOFT
#undef TG_CUDA_FN
#undef TG_NCCL_FN
    return t;
  }();
  g_host = host;
  return &table;
}
