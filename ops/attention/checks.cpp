// ops/attention/checks.cpp — the input checks of scaled_dot_product_attention and its packed
// forms (declared in ops/attention/internal.hpp): dtypes, devices and every shape, the key/value
// head count (grouped-query attention), the options and the mask against (B, NH, T, S); each error
// names the op and every input's shape. Deliberately not here: running the op (sdpa.cpp).
#include "ops/attention/internal.hpp"
#include "ops/core/cuda_dispatch.hpp"
#include "ops/core/detail.hpp"

#include <cmath>

namespace tg::detail {

namespace {
constexpr const char* kSdpa = "scaled_dot_product_attention";
}  // namespace

void check_options(const kern::AttentionLayout& d, const Tensor& q, const Tensor& k,
                   const Tensor& v, const AttentionMask& mask, const SDPAOptions& opts,
                   const std::string& shapes) {
  if (!(opts.dropout_p >= 0.0 && opts.dropout_p < 1.0))
    throw Error(
        fmt::format("{}: dropout_p must be in [0, 1), got {} ({})", kSdpa, opts.dropout_p, shapes));
  if (opts.scale && !std::isfinite(*opts.scale))
    throw Error(fmt::format("{}: scale must be finite, got {} ({})", kSdpa, *opts.scale, shapes));
  if (!q.device().is_cuda()) return mask.check(kSdpa, d.B, d.NH, d.T, d.S);
  mask.on(kCPU).check(kSdpa, d.B, d.NH, d.T, d.S);  // the checks read the mask's tensors there
  check_same_device(q, k, kSdpa, "q", "k");
  check_same_device(q, v, kSdpa, "q", "v");
  const Tensor& am = mask.additive_part();
  if (am.defined() && am.dtype() != q.dtype())
    throw Error(fmt::format("{}: additive mask {} is {} but q {} is {}", kSdpa,
                            shape_str(am.shape()), dtype_name(am.dtype()), shape_str(q.shape()),
                            dtype_name(q.dtype())));
}

// The key/value head count against NH: equal, or with enable_gqa a divisor of it. Returns NKV
// for the layout (0 when equal).
namespace {
int64_t check_heads(int64_t NH, int64_t NKV, const SDPAOptions& opts, const std::string& shapes,
                    bool hl) {
  if (NKV == NH) return 0;
  if (!opts.enable_gqa)
    throw Error(
        fmt::format("{}: {}: q has {} heads but k and v have {}{}; set enable_gqa for "
                    "grouped-query attention",
                    kSdpa, shapes, NH, NKV, hl ? " (heads_last: (B, T, NH, hs))" : ""));
  if (NKV == 0 || NH % NKV != 0)
    throw Error(
        fmt::format("{}: {}: enable_gqa needs the {} query heads to be a multiple of the {} "
                    "key/value heads",
                    kSdpa, shapes, NH, NKV));
  return NKV;
}
}  // namespace

SdpaChecked check_sdpa(const Tensor& q, const Tensor& k, const Tensor& v, const SDPAOptions& opts) {
  check_float(q, kSdpa, "q", true);
  check_float(k, kSdpa, "k", true);
  check_float(v, kSdpa, "v", true);
  const std::string shapes = fmt::format("q {}, k {}, v {}", shape_str(q.shape()),
                                         shape_str(k.shape()), shape_str(v.shape()));
  const bool hl = opts.heads_last;
  if (q.dim() != 4 || k.dim() != 4 || v.dim() != 4)
    throw Error(fmt::format("{}: {}: expected 4-D q {}, k {}, v {}", kSdpa, shapes,
                            hl ? "(B, T, NH, hs)" : "(B, NH, T, hs)",
                            hl ? "(B, S, NH, hs)" : "(B, NH, S, hs)",
                            hl ? "(B, S, NH, hs_v) (heads_last)" : "(B, NH, S, hs_v)"));
  check_same_dtype(q, k, kSdpa, "q", "k");
  check_same_dtype(q, v, kSdpa, "q", "v");
  const int dh = hl ? 2 : 1, dt = hl ? 1 : 2;  // the head and the length dims
  if (k.size(0) != q.size(0) || v.size(0) != q.size(0))
    throw Error(fmt::format("{}: {}: batch dims B differ", kSdpa, shapes));
  if (k.size(dh) != v.size(dh))
    throw Error(fmt::format("{}: {}: head counts of k ({}) and v ({}) differ{}", kSdpa, shapes,
                            k.size(dh), v.size(dh), hl ? " (heads_last: (B, S, NH, hs))" : ""));
  const int64_t nkv = check_heads(q.size(dh), k.size(dh), opts, shapes, hl);
  if (k.size(3) != q.size(3))
    throw Error(fmt::format("{}: {}: head size hs of q ({}) and k ({}) differ", kSdpa, shapes,
                            q.size(3), k.size(3)));
  if (v.size(dt) != k.size(dt))
    throw Error(fmt::format("{}: {}: key length S of k ({}) and v ({}) differ", kSdpa, shapes,
                            k.size(dt), v.size(dt)));
  if (q.device() != k.device() || q.device() != v.device())
    throw Error(fmt::format("{}: {}: q is on {}, k on {}, v on {}; move them to one device", kSdpa,
                            shapes, q.device().str(), k.device().str(), v.device().str()));
  kern::AttentionLayout d{q.size(0), q.size(dh), q.size(dt), k.size(dt), q.size(3), v.size(3), hl};
  d.NKV = nkv;
  return {d, shapes};
}

SdpaChecked check_packed(const Tensor& qkv, const SDPAOptions& opts) {
  check_float(qkv, kSdpa, "qkv", true);
  if (qkv.dim() != 5 || qkv.size(2) != 3)
    throw Error(fmt::format("{}: qkv {}: expected (B, T, 3, NH, hs), q, k, v for every position",
                            kSdpa, shape_str(qkv.shape())));
  const int64_t B = qkv.size(0), T = qkv.size(1), NH = qkv.size(3), hs = qkv.size(4);
  if (opts.enable_gqa)
    throw Error(
        fmt::format("{}: qkv {}: packed qkv has one head count; grouped-query attention "
                    "takes q and kv (scaled_dot_product_attention_kv_packed) or q, k, v",
                    kSdpa, shape_str(qkv.shape())));
  kern::AttentionLayout d{B, NH, T, T, hs, hs, true};
  d.packing = kern::AttentionLayout::kQKV;
  return {d, fmt::format("qkv {}", shape_str(qkv.shape()))};
}

SdpaChecked check_kv_packed(const Tensor& q, const Tensor& kv, const SDPAOptions& opts) {
  check_float(q, kSdpa, "q", true);
  check_float(kv, kSdpa, "kv", true);
  const std::string shapes =
      fmt::format("q {}, kv {}", shape_str(q.shape()), shape_str(kv.shape()));
  if (q.dim() != 4 || kv.dim() != 5 || kv.size(2) != 2)
    throw Error(
        fmt::format("{}: {}: expected q (B, T, NH, hs) and kv (B, S, 2, NH, hs)", kSdpa, shapes));
  check_same_dtype(q, kv, kSdpa, "q", "kv");
  if (kv.size(0) != q.size(0) || kv.size(4) != q.size(3))
    throw Error(fmt::format("{}: {}: B and hs of q and kv differ", kSdpa, shapes));
  const int64_t nkv = check_heads(q.size(2), kv.size(3), opts, shapes, true);
  if (q.device() != kv.device())
    throw Error(fmt::format("{}: {}: q is on {}, kv on {}; move them to one device", kSdpa, shapes,
                            q.device().str(), kv.device().str()));
  const int64_t B = q.size(0), T = q.size(1), NH = q.size(2), hs = q.size(3), S = kv.size(1);
  kern::AttentionLayout d{B, NH, T, S, hs, hs, true};
  d.packing = kern::AttentionLayout::kKV;
  d.NKV = nkv;
  return {d, shapes};
}

}  // namespace tg::detail
