// ops/matmul/cpu/onednn.cpp — the bfloat16 / float16 GEMM on oneDNN's matmul primitive: float32
// accumulation inside oneDNN (AMX tiles or AVX512-BF16 dot products, as it finds them; it asks
// Linux for the AMX tile permission itself), the output rounded once, a linear's bias as the
// primitive's bias argument, a gradient's accumulation as a sum post-op. A primitive is created
// (JIT-compiled) once per (dtypes, sizes, transposes, leading dimensions, bias, sum) and cached;
// executions take a scratchpad of their own, so threads may share a primitive.
// Compiles to stubs without TG_HAVE_ONEDNN (CMake's TG_ONEDNN). Deliberately not here: choosing
// the path (reduced_gemm.cpp), float32 / float64 (OpenBLAS, blas.cpp).
#include "ops/matmul/cpu/reduced_gemm.hpp"

#ifdef TG_HAVE_ONEDNN
#include <oneapi/dnnl/dnnl.hpp>

#include <map>
#include <mutex>
#include <tuple>
#include <unordered_map>
#include <vector>
#endif

namespace tg::cpu {

#ifndef TG_HAVE_ONEDNN
bool onednn_compiled() { return false; }
std::string onednn_impl(DType, std::string* why, bool) {
  if (why)
    *why =
        "tapegrad was built without oneDNN (apt-get install libdnnl-dev, or bash "
        "tools/setup.sh, then reconfigure with TG_ONEDNN=AUTO or ON)";
  return "";
}
bool gemm_reduced_onednn(const ReducedGemm&, std::string* why) {
  onednn_impl(kBFloat16, why);
  return false;
}
#else
namespace {
using dt = dnnl::memory::data_type;

dt to_dnnl(DType t) { return t == kBFloat16 ? dt::bf16 : t == kFloat16 ? dt::f16 : dt::f32; }

dnnl::engine& cpu_engine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

// Everything a primitive is specialised on.
using Key = std::tuple<int, int, bool, bool, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                       bool, bool>;
Key key_of(const ReducedGemm& g) {
  return {
      static_cast<int>(g.ab), static_cast<int>(g.c), g.ta, g.tb, g.M, g.N, g.K, g.lda, g.ldb, g.ldc,
      g.bias != nullptr,      g.accumulate};
}

struct Entry {
  dnnl::matmul prim;
  dnnl::matmul::primitive_desc pd;
};

// The primitive descriptor for g, or an empty one (why set) when oneDNN has no implementation.
dnnl::matmul::primitive_desc make_pd(const ReducedGemm& g, std::string* why) {
  using dims = dnnl::memory::dims;
  const dnnl::memory::desc a({g.M, g.K}, to_dnnl(g.ab), g.ta ? dims{1, g.lda} : dims{g.lda, 1});
  const dnnl::memory::desc b({g.K, g.N}, to_dnnl(g.ab), g.tb ? dims{1, g.ldb} : dims{g.ldb, 1});
  const dnnl::memory::desc c({g.M, g.N}, to_dnnl(g.c), dims{g.ldc, 1});
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (g.accumulate) {
    dnnl::post_ops po;
    po.append_sum(1.0f);
    attr.set_post_ops(po);
  }
  try {
    if (g.bias) {
      const dnnl::memory::desc bias({1, g.N}, to_dnnl(g.ab), dims{g.N, 1});
      return dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, bias, c), attr, cpu_engine());
    }
    return dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, c), attr, cpu_engine());
  } catch (const dnnl::error& e) {
    if (why) *why = std::string("oneDNN has no matmul for it on this CPU: ") + e.what();
    return {};
  }
}

// The cached primitive for g (created on first use), or null.
const Entry* primitive(const ReducedGemm& g, std::string* why) {
  static std::mutex mu;
  static std::map<Key, Entry> cache;
  const Key k = key_of(g);
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(k);
  if (it != cache.end()) return &it->second;
  dnnl::matmul::primitive_desc pd = make_pd(g, why);
  if (!pd) return nullptr;
  return &cache.emplace(k, Entry{dnnl::matmul(pd), pd}).first->second;
}
}  // namespace

bool onednn_compiled() { return true; }

std::string onednn_impl(DType ab, std::string* why, bool allow_ref) {
  ReducedGemm g;
  g.ab = g.c = ab;
  g.M = g.N = g.K = g.lda = g.ldb = g.ldc = 64;
  dnnl::matmul::primitive_desc pd = make_pd(g, why);
  if (!pd) return "";
  std::string impl = pd.impl_info_str();
  if (!allow_ref && impl.rfind("ref", 0) == 0) {
    if (why) *why = "oneDNN has only its reference matmul (" + impl + ") for it on this CPU";
    return "";
  }
  return impl;
}

bool gemm_reduced_onednn(const ReducedGemm& g, std::string* why) {
  const Entry* e = primitive(g, why);
  if (!e) return false;
  dnnl::engine& eng = cpu_engine();
  // Whole-buffer descriptors are the primitive's own (strided) ones: oneDNN reads the caller's
  // memory in place.
  dnnl::memory a(e->pd.src_desc(), eng, const_cast<void*>(g.A));
  dnnl::memory b(e->pd.weights_desc(), eng, const_cast<void*>(g.B));
  dnnl::memory c(e->pd.dst_desc(), eng, g.C);
  thread_local std::vector<char> scratch;
  const size_t need = e->pd.scratchpad_desc().get_size();
  if (scratch.size() < need) scratch.resize(need);
  dnnl::memory sp(e->pd.scratchpad_desc(), eng, scratch.data());
  std::unordered_map<int, dnnl::memory> args{
      {DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}, {DNNL_ARG_SCRATCHPAD, sp}};
  if (g.bias)
    args.emplace(DNNL_ARG_BIAS, dnnl::memory(e->pd.bias_desc(), eng, const_cast<void*>(g.bias)));
  thread_local dnnl::stream s(eng);
  e->prim.execute(s, args);
  s.wait();
  return true;
}
#endif

}  // namespace tg::cpu
