// cuda/loader.cpp — the CUDA face (runtime.cuh, kernels.cuh, nccl.hpp) in the core library of an
// nvcc build: every call goes through the table of libtapegrad_cuda.so (cuda/module.hpp), which
// is dlopen'ed on the first call that needs it. A CPU-only program never makes such a call, so
// it never maps libcudart, cuBLAS or NCCL. Where the module is looked for: $TG_CUDA_LIBRARY
// alone when set; else the build tree's module, the installed one, then the dynamic linker's
// search ("libtapegrad_cuda.so", LD_LIBRARY_PATH). Without a loadable module device_count() is 0
// and every other call throws tg::cuda::Error saying why the module did not load.
#include <dlfcn.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "cuda/module.hpp"
#include "cuda/nccl.hpp"

#ifndef TG_CUDA_MODULE_PATHS
#define TG_CUDA_MODULE_PATHS ""
#endif
#ifndef TG_CUDA_MODULE_NCCL
#define TG_CUDA_MODULE_NCCL 0
#endif

namespace tg::cuda {

namespace {
thread_local const char* g_op = nullptr;

struct Module {
  const ModuleTable* table = nullptr;
  std::string problem;  // why it did not load (every path tried)
};

std::vector<std::string> candidates() {
  if (const char* env = std::getenv("TG_CUDA_LIBRARY"); env && *env) return {env};
  std::vector<std::string> out;
  std::string paths = TG_CUDA_MODULE_PATHS;
  for (size_t start = 0; start <= paths.size();) {
    size_t end = paths.find(':', start);
    if (end == std::string::npos) end = paths.size();
    if (end > start) out.push_back(paths.substr(start, end - start));
    start = end + 1;
  }
  out.push_back("libtapegrad_cuda.so");
  return out;
}

Module load() {
  static const ModuleHost host{&current_op};
  Module m;
  for (const std::string& path : candidates()) {
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* e = dlerror();
      m.problem += (m.problem.empty() ? "" : "; ") + std::string(e ? e : path.c_str());
      continue;
    }
    auto entry = reinterpret_cast<decltype(&tg_cuda_module)>(dlsym(h, "tg_cuda_module"));
    const ModuleTable* t = entry ? entry(&host) : nullptr;
    if (!t || t->abi != kModuleAbi || t->size != sizeof(ModuleTable)) {
      m.problem +=
          (m.problem.empty() ? "" : "; ") + path + ": " +
          (!t ? std::string("no tg_cuda_module entry point")
              : "module ABI " + std::to_string(t->abi) + " (table " + std::to_string(t->size) +
                    " bytes), this library expects ABI " + std::to_string(kModuleAbi) + " (" +
                    std::to_string(sizeof(ModuleTable)) + " bytes)");
      dlclose(h);
      continue;
    }
    m.table = t;  // never dlclose'd: kernels and the allocator live until exit
    m.problem.clear();
    return m;
  }
  m.problem = "the CUDA module libtapegrad_cuda.so could not be loaded (" + m.problem +
              "); set TG_CUDA_LIBRARY to its path";
  return m;
}

const Module& module() {
  static const Module m = load();
  return m;
}

const ModuleTable& need(const char* call) {
  const Module& m = module();
  if (!m.table) throw Error(std::string(current_op()) + ": " + call + ": " + m.problem);
  return *m.table;
}
}  // namespace

bool built_with_cuda() { return true; }
const char* unavailable_reason() {
  const Module& m = module();
  if (!m.table) return m.problem.c_str();
  return "";
}
const char* current_op() { return g_op ? g_op : "cuda"; }
OpScope::OpScope(const char* op) : prev_(g_op) { g_op = op; }
OpScope::~OpScope() { g_op = prev_; }

#define TG_CUDA_FN(ret, name, params, args) \
  ret name params { return need(#name).name args; }
#define TG_CUDA_SOFT(ret, name, params, args, value) \
  ret name params {                                  \
    const Module& m = module();                      \
    if (!m.table) return value;                      \
    return m.table->name args;                       \
  }
#define TG_NCCL_FN(ret, name, params, args)
#include "cuda/module_api.inc"
#undef TG_CUDA_FN
#undef TG_CUDA_SOFT
#undef TG_NCCL_FN

namespace nccl {
bool built() { return TG_CUDA_MODULE_NCCL; }  // known at build time: no load just to ask
#define TG_CUDA_FN(ret, name, params, args)
#define TG_CUDA_SOFT(ret, name, params, args, value)
#define TG_NCCL_FN(ret, name, params, args) \
  ret name params { return need("nccl::" #name).nccl_##name args; }
#include "cuda/module_api.inc"
#undef TG_CUDA_FN
#undef TG_CUDA_SOFT
#undef TG_NCCL_FN
}  // namespace nccl

}  // namespace tg::cuda
