// ops/autocast/autocast.hpp — automatic mixed precision (PyTorch's torch.autocast): inside an
// AutocastGuard the ops on PyTorch 1.13's CPU autocast lists run in the dtype their list says,
// whatever dtype their inputs come in:
//   lower_precision_fp  matmul, mm, bmm, linear, scaled_dot_product_attention (+ packed forms):
//                       floating inputs are cast to the guard's dtype (bfloat16 or float16);
//   fp32                cross_entropy, nll_loss, the regression and BCE losses, kl_div, prod:
//                       floating inputs are cast to float32;
//   promote             cat, stack: every floating input goes to the widest floating dtype among
//                       them (so a bfloat16 and a float32 input give float32).
// Every other op runs in its inputs' dtype (softmax, gelu, sum, layer_norm, embedding, …), and ops
// composed of listed ones inherit their decisions (einsum and attention() through matmul and SDPA).
// float64 inputs are never cast (gradcheck keeps working under a guard). The casts are recorded
// .to() ops, so gradients reach float32 parameters in float32.
//
//   { tg::AutocastGuard guard(tg::kBFloat16);   // or kFloat16
//     Tensor logits = model.forward(x);          // linear in bfloat16
//     loss = tg::cross_entropy(logits, y); }     // float32
//   loss.backward();                             // the parameters' gradients are float32
//
// Guards are thread-local and nest; AutocastGuard(false) turns autocast off inside a region (and
// keeps the outer dtype, as PyTorch's default dtype argument does). Within the outermost region,
// the cast of a float32 leaf that requires grad (a parameter) to the reduced dtype is made once and
// reused (PyTorch's autocast cache); the cache is cleared when the outermost guard exits. Unlike
// PyTorch's, a cached cast is made again when the parameter was written in place since (its version
// counter moved: an optimizer step) or a backward has freed its tape node, so a cached weight is
// never stale and a second forward/backward inside one region works.
// The state is device-independent (one flag for CPU and CUDA tensors).
// Deliberately not here: the ops' kernels in reduced precision (each op family), gradient scaling
// (nn/amp.hpp: nn::GradScaler).
#pragma once

#include "autograd/tensor.hpp"

#include <cstddef>
#include <initializer_list>
#include <optional>
#include <vector>

namespace tg {

class AutocastGuard {
 public:
  // dtype: kBFloat16 or kFloat16 (anything else throws). cache_enabled: PyTorch's cache_enabled.
  explicit AutocastGuard(DType dtype = kBFloat16, bool enabled = true, bool cache_enabled = true);
  // Enables or disables autocast in the region, keeping the current dtype.
  explicit AutocastGuard(bool enabled);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool prev_enabled_, prev_cache_;
  DType prev_dtype_;
};

bool is_autocast_enabled();
DType get_autocast_dtype();  // kBFloat16 until a guard sets another
bool is_autocast_cache_enabled();
void clear_autocast_cache();  // torch.clear_autocast_cache

namespace autocast {

enum class Policy { LowerPrecisionFp, Fp32, Promote };
const char* policy_name(Policy p);  // "lower_precision_fp", "fp32", "promote"

// The one table: op name -> policy, PyTorch 1.13's CPU lists restricted to tapegrad's ops.
struct OpPolicy {
  const char* op;
  Policy policy;
};
const std::vector<OpPolicy>& op_table();
Policy policy_of(const char* op);  // throws naming the op when it is not in the table

// The policies on a list of arguments (undefined ones stay undefined; non-floating and float64
// ones are never cast). Each returns the arguments after the casts, or nothing when autocast is
// off or no argument changes (so an op's hook re-enters the op only once).
std::optional<std::vector<Tensor>> lower_precision_fp(const std::vector<Tensor>& args);
std::optional<std::vector<Tensor>> fp32(const std::vector<Tensor>& args);
std::optional<std::vector<Tensor>> promote(const std::vector<Tensor>& args);

namespace detail {
extern thread_local bool g_enabled;
std::optional<std::vector<Tensor>> cast_slow(const char* op,
                                             std::initializer_list<const Tensor*> args);
std::optional<std::vector<Tensor>> cast_slow(const char* op, const std::vector<Tensor>& args);
}  // namespace detail

// The hook at the top of a listed op's public entry: its arguments cast by the op's policy in the
// table, or nothing (the common case, one thread-local read when autocast is off):
//   if (auto c = autocast::cast("matmul", {&a, &b})) return matmul((*c)[0], (*c)[1], site);
inline std::optional<std::vector<Tensor>> cast(const char* op,
                                               std::initializer_list<const Tensor*> args) {
  if (!detail::g_enabled) return std::nullopt;
  return detail::cast_slow(op, args);
}
inline std::optional<std::vector<Tensor>> cast(const char* op, const std::vector<Tensor>& args) {
  if (!detail::g_enabled) return std::nullopt;
  return detail::cast_slow(op, args);
}

// Entries in the cast cache of this thread (tests: a parameter is cast once per region).
size_t cache_size();

}  // namespace autocast
}  // namespace tg
