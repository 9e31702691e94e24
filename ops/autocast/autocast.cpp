// ops/autocast/autocast.cpp — autocast's thread-local state, the op table and its three policies,
// and the cast cache (ops/autocast/autocast.hpp says what each does). The table was checked op by
// op against PyTorch 1.13's CPU autocast (tools/make_autocast_fixtures.py prints what PyTorch
// decides; tests/ops/test_autocast.cpp runs every entry). Deliberately not here: the hooks, one
// line at the top of each listed op's public entry in its own family.
#include "ops/autocast/autocast.hpp"

#include "autograd/node.hpp"
#include "autograd/record.hpp"

#include <fmt/format.h>

#include <cstring>
#include <memory>
#include <unordered_map>

namespace tg {
namespace autocast::detail {
thread_local bool g_enabled = false;
}  // namespace autocast::detail

namespace {

struct State {
  DType dtype = kBFloat16;
  bool cache_enabled = true;
  int nesting = 0;  // guards alive in this thread, enabled or not
};
thread_local State g_state;

// A cast parameter: valid while its key lives, its version is unchanged and no backward has freed
// the cast's node.
struct CacheEntry {
  std::weak_ptr<TensorImpl> key;
  uint32_t version = 0;
  Tensor cast;
};
thread_local std::unordered_map<const TensorImpl*, CacheEntry> g_cache;

bool fresh(const CacheEntry& e, const Tensor& arg) {
  if (e.key.lock() != arg.impl_ptr() || e.version != arg.version()) return false;
  const Node* n = e.cast.grad_fn();
  return n && !n->released;
}

// PyTorch's is_eligible: a floating tensor that is not float64.
bool eligible(const Tensor& t) {
  return t.defined() && is_floating(t.dtype()) && t.dtype() != kFloat64;
}

// PyTorch's cached_cast: parameters (float32 leaves that require grad, not views) cast to the
// reduced dtype are cached while grad mode is on.
Tensor cached_cast(const Tensor& arg, DType to) {
  const bool cacheable = to == g_state.dtype && g_state.cache_enabled && arg.dtype() == kFloat32 &&
                         arg.requires_grad() && arg.is_leaf() && !arg.impl()->is_view;
  if (!cacheable) return arg.to(to);
  auto it = g_cache.find(arg.impl());
  if (it != g_cache.end() && fresh(it->second, arg)) return it->second.cast;
  Tensor out = arg.to(to);
  if (grad_enabled()) g_cache[arg.impl()] = CacheEntry{arg.impl_ptr(), arg.version(), out};
  return out;
}

std::optional<std::vector<Tensor>> cast_all(const std::vector<Tensor>& args, DType to) {
  bool any = false;
  for (const Tensor& a : args) any = any || (eligible(a) && a.dtype() != to);
  if (!any) return std::nullopt;
  std::vector<Tensor> out;
  out.reserve(args.size());
  for (const Tensor& a : args)
    out.push_back(eligible(a) && a.dtype() != to ? cached_cast(a, to) : a);
  return out;
}

// PyTorch 1.13's CPU lists (aten/src/ATen/autocast_mode.cpp), the ops tapegrad has. Its others
// (conv*, baddbmm, addmm, addbmm, conv_tbc, prelu; cdist, trace, the pooling, padding, FFT and
// linalg ops, the margin and CTC losses; index_copy) have no tapegrad op yet: a new op named
// there gets its line here and the one-line hook in its entry.
const std::vector<autocast::OpPolicy> kTable = {
    {"matmul", autocast::Policy::LowerPrecisionFp},
    {"mm", autocast::Policy::LowerPrecisionFp},
    {"bmm", autocast::Policy::LowerPrecisionFp},
    {"linear", autocast::Policy::LowerPrecisionFp},
    {"scaled_dot_product_attention", autocast::Policy::LowerPrecisionFp},
    {"scaled_dot_product_attention_packed", autocast::Policy::LowerPrecisionFp},
    {"scaled_dot_product_attention_kv_packed", autocast::Policy::LowerPrecisionFp},
    {"cross_entropy", autocast::Policy::Fp32},
    {"nll_loss", autocast::Policy::Fp32},
    {"mse_loss", autocast::Policy::Fp32},
    {"l1_loss", autocast::Policy::Fp32},
    {"smooth_l1_loss", autocast::Policy::Fp32},
    {"huber_loss", autocast::Policy::Fp32},
    {"binary_cross_entropy", autocast::Policy::Fp32},
    {"binary_cross_entropy_with_logits", autocast::Policy::Fp32},
    {"kl_div", autocast::Policy::Fp32},
    {"prod", autocast::Policy::Fp32},
    {"cat", autocast::Policy::Promote},
    {"stack", autocast::Policy::Promote},
};

}  // namespace

// ---- the guard ----
AutocastGuard::AutocastGuard(DType dtype, bool enabled, bool cache_enabled)
    : prev_enabled_(autocast::detail::g_enabled),
      prev_cache_(g_state.cache_enabled),
      prev_dtype_(g_state.dtype) {
  if (!is_reduced(dtype))
    throw Error(fmt::format("AutocastGuard: dtype {}: autocast runs in bfloat16 or float16",
                            dtype_name(dtype)));
  autocast::detail::g_enabled = enabled;
  g_state.dtype = dtype;
  g_state.cache_enabled = cache_enabled;
  ++g_state.nesting;
}

AutocastGuard::AutocastGuard(bool enabled)
    : AutocastGuard(g_state.dtype, enabled, g_state.cache_enabled) {}

AutocastGuard::~AutocastGuard() {
  if (--g_state.nesting == 0) clear_autocast_cache();
  autocast::detail::g_enabled = prev_enabled_;
  g_state.dtype = prev_dtype_;
  g_state.cache_enabled = prev_cache_;
}

bool is_autocast_enabled() { return autocast::detail::g_enabled; }
DType get_autocast_dtype() { return g_state.dtype; }
bool is_autocast_cache_enabled() { return g_state.cache_enabled; }
void clear_autocast_cache() { g_cache.clear(); }

namespace autocast {

const char* policy_name(Policy p) {
  switch (p) {
    case Policy::LowerPrecisionFp:
      return "lower_precision_fp";
    case Policy::Fp32:
      return "fp32";
    case Policy::Promote:
      return "promote";
  }
  return "?";
}

const std::vector<OpPolicy>& op_table() { return kTable; }

Policy policy_of(const char* op) {
  for (const OpPolicy& e : kTable)
    if (std::strcmp(e.op, op) == 0) return e.policy;
  throw Error(fmt::format(
      "autocast: op '{}' is not in the autocast table (ops/autocast/autocast.cpp)", op));
}

std::optional<std::vector<Tensor>> lower_precision_fp(const std::vector<Tensor>& args) {
  if (!detail::g_enabled) return std::nullopt;
  return cast_all(args, g_state.dtype);
}

std::optional<std::vector<Tensor>> fp32(const std::vector<Tensor>& args) {
  if (!detail::g_enabled) return std::nullopt;
  return cast_all(args, kFloat32);
}

std::optional<std::vector<Tensor>> promote(const std::vector<Tensor>& args) {
  if (!detail::g_enabled) return std::nullopt;
  DType to = g_state.dtype;
  for (const Tensor& a : args)
    if (eligible(a)) to = promote_types(to, a.dtype());
  return cast_all(args, to);
}

namespace detail {
std::optional<std::vector<Tensor>> cast_slow(const char* op, const std::vector<Tensor>& args) {
  switch (policy_of(op)) {
    case Policy::LowerPrecisionFp:
      return lower_precision_fp(args);
    case Policy::Fp32:
      return fp32(args);
    case Policy::Promote:
      return promote(args);
  }
  return std::nullopt;
}

std::optional<std::vector<Tensor>> cast_slow(const char* op,
                                             std::initializer_list<const Tensor*> args) {
  std::vector<Tensor> v;
  v.reserve(args.size());
  for (const Tensor* a : args) v.push_back(*a);
  return cast_slow(op, v);
}
}  // namespace detail

size_t cache_size() { return g_cache.size(); }

}  // namespace autocast
}  // namespace tg
