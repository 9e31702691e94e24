// tests/ops/test_parity.cpp — outputs and input gradients against PyTorch 1.13 reference values
// for softmax, log_softmax, layer_norm, rms_norm, gelu, glu, the SwiGLU block, the binary math
// (fmod, remainder, copysign, lerp, logaddexp), the scans (prod, cumprod, cummax, cummin,
// logcumsumexp), diagonal, diag, unfold, einsum, scatter / scatter_reduce, cross_entropy (class
// weights, probability targets), the other losses (mse … normalize), flip/roll/repeat/pad and
// broadcasting matmul, in float64 (rtol 1e-10) and float32 (1e-5). Each case is
// tests/fixtures/<family>/<case>.safetensors (written by tools/make_fixtures.py); every test is
// tagged [parity][<family>].
#include "fixtures.hpp"
#include "helpers.hpp"

#include <functional>

using namespace tg;

namespace {
using ParityFn = std::function<Tensor(const std::vector<Tensor>&)>;
using V = std::vector<Tensor>;

// Loads the case's tensor <arg> for every arg, runs fn in `dtype`, and compares "out" and, after a
// backward with "dout", "d<arg>" for every floating arg.
void check_parity(const std::string& name, const std::vector<std::string>& args, const ParityFn& fn,
                  DType dtype, double atol, double rtol) {
  const tgt::Fixture f(name);
  std::vector<Tensor> ins;
  for (const std::string& a : args) {
    const bool constant = a[0] == '=';  // "=name": loaded in dtype, no gradient (class weights)
    Tensor t = f.tensor(constant ? a.substr(1) : a);
    if (is_floating(t.dtype())) t = t.to(dtype).detach();
    if (is_floating(t.dtype()) && !constant) t.requires_grad_();
    ins.push_back(t);
  }
  Tensor out = fn(ins);
  const std::string what = name + " (" + dtype_name(dtype) + ")";
  REQUIRE(out.dtype() == dtype);
  tgt::require_close(out, f.tensor("out"), atol, rtol, what + " out");
  out.backward(f.tensor("dout").to(dtype));
  for (size_t i = 0; i < args.size(); ++i) {
    if (!ins[i].requires_grad()) continue;
    tgt::require_close(ins[i].grad(), f.tensor("d" + args[i]), atol, rtol, what + " d" + args[i]);
  }
}

struct ParityCase {
  std::string name;  // <family>/<case>
  std::vector<std::string> args;
  ParityFn fn;
};

CrossEntropyOptions ce_opts(Reduction r, int64_t ignore = -100, double ls = 0) {
  CrossEntropyOptions o;
  o.reduction = r;
  o.ignore_index = ignore;
  o.label_smoothing = ls;
  return o;
}

ParityFn ce_fn(CrossEntropyOptions o) {
  return [o](const std::vector<Tensor>& in) { return cross_entropy(in[0], in[1], o); };
}
ParityFn scat(const std::string& reduce, bool include_self) {
  return [reduce, include_self](const std::vector<Tensor>& in) {
    return scatter_reduce(in[0], 1, in[2], in[1], reduce, include_self);
  };
}
ParityFn ein(const std::string& eq) {
  return [eq](const std::vector<Tensor>& in) { return einsum(eq, in); };
}
// The same with class weights, the case's third tensor.
ParityFn ce_w(CrossEntropyOptions o) {
  return [o](const std::vector<Tensor>& in) {
    CrossEntropyOptions w = o;
    w.weight = in[2];
    return cross_entropy(in[0], in[1], w);
  };
}

std::vector<ParityCase> cases() {
  return {
      {"softmax/dim1", {"x"}, [](const std::vector<Tensor>& in) { return softmax(in[0], 1); }},
      {"softmax/dim0", {"x"}, [](const std::vector<Tensor>& in) { return softmax(in[0], 0); }},
      {"log_softmax/dimm1",
       {"x"},
       [](const std::vector<Tensor>& in) { return log_softmax(in[0], -1); }},
      {"log_softmax/dim1",
       {"x"},
       [](const std::vector<Tensor>& in) { return log_softmax(in[0], 1); }},
      {"layer_norm/1d",
       {"x", "w", "b"},
       [](const std::vector<Tensor>& in) { return layer_norm(in[0], {6}, in[1], in[2], 1e-5); }},
      {"layer_norm/2d",
       {"x", "w", "b"},
       [](const std::vector<Tensor>& in) {
         return layer_norm(in[0], {3, 4}, in[1], in[2], 1e-5);
       }},
      {"rms_norm/1d",
       {"x", "w"},
       [](const std::vector<Tensor>& in) { return rms_norm(in[0], {6}, in[1], 1e-5); }},
      {"rms_norm/2d",
       {"x", "w"},
       [](const std::vector<Tensor>& in) {
         return rms_norm(in[0], {3, 4}, in[1], 1e-6);
       }},
      {"rms_norm/noweight",
       {"x"},
       [](const std::vector<Tensor>& in) { return rms_norm(in[0], {5}, Tensor(), 1e-5); }},
      {"glu/dimm1", {"x"}, [](const std::vector<Tensor>& in) { return glu(in[0], -1); }},
      {"glu/dim0", {"x"}, [](const std::vector<Tensor>& in) { return glu(in[0], 0); }},
      {"swiglu/block",
       {"x", "wg", "wu", "wd"},
       [](const std::vector<Tensor>& in) {
         return linear(silu(linear(in[0], in[1])) * linear(in[0], in[2]), in[3]);
       }},
      {"binary_math/fmod", {"a", "b"}, [](const V& in) { return fmod(in[0], in[1]); }},
      {"binary_math/remainder", {"a", "b"}, [](const V& in) { return remainder(in[0], in[1]); }},
      {"binary_math/copysign", {"a", "b"}, [](const V& in) { return copysign(in[0], in[1]); }},
      {"binary_math/lerp", {"a", "e", "w"}, [](const V& in) { return lerp(in[0], in[1], in[2]); }},
      {"binary_math/logaddexp", {"a", "b"}, [](const V& in) { return logaddexp(in[0], in[1]); }},
      {"scan/prod_dim1_zeros", {"x"}, [](const V& in) { return prod(in[0], 1); }},
      {"scan/prod_dim2_keepdim", {"x"}, [](const V& in) { return prod(in[0], 2, true); }},
      {"scan/prod_all", {"x"}, [](const V& in) { return prod(in[0]); }},
      {"scan/cumprod_dim1_zeros", {"x"}, [](const V& in) { return cumprod(in[0], 1); }},
      {"scan/cummax_ties", {"x"}, [](const V& in) { return cummax(in[0], 1).values; }},
      {"scan/cummin_dim0", {"x"}, [](const V& in) { return cummin(in[0], 0).values; }},
      {"scan/logcumsumexp_dim1", {"x"}, [](const V& in) { return logcumsumexp(in[0], 1); }},
      {"picks/diagonal_off1_d02", {"x"}, [](const V& in) { return diagonal(in[0], 1, 0, 2); }},
      {"picks/diagonal_offm2_d21", {"x"}, [](const V& in) { return diagonal(in[0], -2, 2, 1); }},
      {"picks/diag_vec_km1", {"x"}, [](const V& in) { return diag(in[0], -1); }},
      {"picks/diag_mat_k1", {"x"}, [](const V& in) { return diag(in[0], 1); }},
      {"picks/unfold_d1_s3_st2", {"x"}, [](const V& in) { return unfold(in[0], 1, 3, 2); }},
      {"picks/unfold_overlap", {"x"}, [](const V& in) { return unfold(in[0], -1, 4, 1); }},
      {"einsum/mm", {"x0", "x1"}, ein("ij,jk->ik")},
      {"einsum/bmm", {"x0", "x1"}, ein("bij,bjk->bik")},
      {"einsum/attn", {"x0", "x1"}, ein("bhid,bhjd->bhij")},
      {"einsum/trace", {"x0"}, ein("ii")},
      {"einsum/diag", {"x0"}, ein("ii->i")},
      {"einsum/dot", {"x0", "x1"}, ein("i,i->")},
      {"einsum/outer", {"x0", "x1"}, ein("i,j->ij")},
      {"einsum/implicit", {"x0", "x1"}, ein("ij,jk")},
      {"einsum/ellipsis_broadcast", {"x0", "x1"}, ein("...ij,...jk->...ik")},
      {"einsum/three", {"x0", "x1", "x2"}, ein("abc,cd,de->abe")},
      {"einsum/transpose_sum", {"x0"}, ein("ijk->kj")},
      {"einsum/bilinear", {"x0", "x1", "x2"}, ein("bn,anm,bm->ba")},
      {"scatter/overwrite",
       {"x", "src", "index"},
       [](const V& in) { return scatter(in[0], 1, in[2], in[1]); }},
      {"scatter/sum_self", {"x", "src", "index"}, scat("sum", true)},
      {"scatter/sum_noself", {"x", "src", "index"}, scat("sum", false)},
      {"scatter/mean_self", {"x", "src", "index"}, scat("mean", true)},
      {"scatter/mean_noself", {"x", "src", "index"}, scat("mean", false)},
      {"scatter/amax_self", {"x", "src", "index"}, scat("amax", true)},
      {"scatter/amax_noself", {"x", "src", "index"}, scat("amax", false)},
      {"scatter/amin_self", {"x", "src", "index"}, scat("amin", true)},
      {"scatter/amin_noself", {"x", "src", "index"}, scat("amin", false)},
      {"scatter/prod_zeros_self", {"x", "src", "index"}, scat("prod", true)},
      {"scatter/prod_zeros_noself", {"x", "src", "index"}, scat("prod", false)},
      {"scatter/amax_ties", {"x", "src", "index"}, scat("amax", true)},
      {"losses/mse_mean", {"x", "t"}, [](const V& in) { return mse_loss(in[0], in[1]); }},
      {"losses/l1_sum",
       {"x", "t"},
       [](const V& in) { return l1_loss(in[0], in[1], Reduction::Sum); }},
      {"losses/smooth_l1_beta0.5",
       {"x", "t"},
       [](const V& in) { return smooth_l1_loss(in[0], in[1], Reduction::Mean, 0.5); }},
      {"losses/huber_delta0.7_none",
       {"x", "t"},
       [](const V& in) { return huber_loss(in[0], in[1], Reduction::None, 0.7); }},
      {"losses/bce_weight",
       {"x", "t", "=weight"},
       [](const V& in) { return binary_cross_entropy(in[0], in[1], in[2]); }},
      {"losses/bce_logits_pos_weight",
       {"x", "t", "=weight", "=pos_weight"},
       [](const V& in) { return binary_cross_entropy_with_logits(in[0], in[1], in[2], in[3]); }},
      {"losses/bce_logits_sum",
       {"x", "t"},
       [](const V& in) {
         return binary_cross_entropy_with_logits(in[0], in[1], Tensor(), Tensor(), Reduction::Sum);
       }},
      {"losses/nll_weight_ignore",
       {"x", "t", "=weight"},
       [](const V& in) { return nll_loss(in[0], in[1], in[2]); }},
      {"losses/nll_none",
       {"x", "t"},
       [](const V& in) { return nll_loss(in[0], in[1], Tensor(), -100, Reduction::None); }},
      {"losses/kl_batchmean",
       {"x", "t"},
       [](const V& in) { return kl_div(in[0], in[1], Reduction::BatchMean); }},
      {"losses/kl_log_target_sum",
       {"x", "t"},
       [](const V& in) { return kl_div(in[0], in[1], Reduction::Sum, true); }},
      {"losses/cosine_dim1",
       {"x", "t"},
       [](const V& in) { return cosine_similarity(in[0], in[1]); }},
      {"losses/normalize_p2", {"x"}, [](const V& in) { return normalize(in[0]); }},
      {"losses/normalize_p3_dimm1", {"x"}, [](const V& in) { return normalize(in[0], 3.0, -1); }},
      {"repeat/flip_0_2",
       {"x"},
       [](const V& in) {
         return flip(in[0], {0, 2});
       }},
      {"repeat/roll_1_m1",
       {"x"},
       [](const V& in) {
         return roll(in[0], {1, -3}, {1, 2});
       }},
      {"repeat/roll_flat", {"x"}, [](const V& in) { return roll(in[0], {5}); }},
      {"repeat/repeat_2_1_1_3",
       {"x"},
       [](const V& in) {
         return repeat(in[0], {2, 1, 1, 3});
       }},
      {"repeat/repeat_interleave_3_dim1",
       {"x"},
       [](const V& in) { return repeat_interleave(in[0], 3, 1); }},
      {"repeat/pad_constant",
       {"x"},
       [](const V& in) {
         return pad(in[0], {1, 2, -1, 1}, "constant", 0.5);
       }},
      {"repeat/pad_reflect",
       {"x"},
       [](const V& in) {
         return pad(in[0], {3, 2, 2, 1}, "reflect");
       }},
      {"repeat/pad_replicate",
       {"x"},
       [](const V& in) {
         return pad(in[0], {2, 3, 1, 0}, "replicate");
       }},
      {"repeat/pad_circular",
       {"x"},
       [](const V& in) {
         return pad(in[0], {4, 1, 1, 3}, "circular");
       }},
      {"gelu/none", {"x"}, [](const std::vector<Tensor>& in) { return gelu(in[0], "none"); }},
      {"gelu/tanh", {"x"}, [](const std::vector<Tensor>& in) { return gelu(in[0], "tanh"); }},
      {"cross_entropy/mean", {"x", "t"}, ce_fn(ce_opts(Reduction::Mean))},
      {"cross_entropy/sum", {"x", "t"}, ce_fn(ce_opts(Reduction::Sum))},
      {"cross_entropy/none", {"x", "t"}, ce_fn(ce_opts(Reduction::None))},
      {"cross_entropy/ignore", {"x", "t"}, ce_fn(ce_opts(Reduction::Mean, -100))},
      {"cross_entropy/smooth", {"x", "t"}, ce_fn(ce_opts(Reduction::Mean, -100, 0.1))},
      {"cross_entropy/smooth_ignore_none", {"x", "t"}, ce_fn(ce_opts(Reduction::None, -100, 0.2))},
      {"cross_entropy/smooth_ignore_mean", {"x", "t"}, ce_fn(ce_opts(Reduction::Mean, 2, 0.3))},
      {"cross_entropy/ncd", {"x", "t"}, ce_fn(ce_opts(Reduction::Mean, -100, 0.05))},
      {"cross_entropy/ncd_none", {"x", "t"}, ce_fn(ce_opts(Reduction::None))},
      {"cross_entropy/weight_mean", {"x", "t", "=w"}, ce_w(ce_opts(Reduction::Mean))},
      {"cross_entropy/weight_sum", {"x", "t", "=w"}, ce_w(ce_opts(Reduction::Sum))},
      {"cross_entropy/weight_none", {"x", "t", "=w"}, ce_w(ce_opts(Reduction::None))},
      {"cross_entropy/weight_smooth_ignore_mean",
       {"x", "t", "=w"},
       ce_w(ce_opts(Reduction::Mean, 2, 0.2))},
      {"cross_entropy/weight_smooth_none",
       {"x", "t", "=w"},
       ce_w(ce_opts(Reduction::None, -100, 0.1))},
      {"cross_entropy/probs_mean", {"x", "p"}, ce_fn(ce_opts(Reduction::Mean))},
      {"cross_entropy/probs_weight_smooth_sum",
       {"x", "p", "=w"},
       ce_w(ce_opts(Reduction::Sum, -100, 0.1))},
      {"cross_entropy/probs_ncd_none", {"x", "p"}, ce_fn(ce_opts(Reduction::None))},
      // (2,1,3,4)·(5,4,6) -> (2,5,3,6): batch dims broadcast; 1-D·3-D: (4)·(2,4,3) -> (2,3).
      {"matmul/4d3d",
       {"a", "b"},
       [](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); }},
      {"matmul/1d3d",
       {"a", "b"},
       [](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); }},
  };
}

// Every case of one family (the part of its name before the '/'), one SECTION each.
void check_family(const std::string& family, DType dtype, double atol, double rtol) {
  int n = 0;
  for (const ParityCase& c : cases()) {
    if (c.name.rfind(family + "/", 0) != 0) continue;
    ++n;
    SECTION(c.name) { check_parity(c.name, c.args, c.fn, dtype, atol, rtol); }
  }
  REQUIRE(n > 0);
}
}  // namespace

// float64 to rtol 1e-10 and float32 to 1e-5, one pair of test cases per family.
#define TG_PARITY_FAMILY(family)                                                   \
  TEST_CASE(#family ": float64 outputs and gradients match PyTorch to rtol 1e-10", \
            "[parity][" #family "]") {                                             \
    check_family(#family, kFloat64, 1e-12, 1e-10);                                 \
  }                                                                                \
  TEST_CASE(#family ": float32 outputs and gradients match PyTorch to 1e-5",       \
            "[parity][" #family "]") {                                             \
    check_family(#family, kFloat32, 1e-5, 1e-5);                                   \
  }

TG_PARITY_FAMILY(softmax)
TG_PARITY_FAMILY(log_softmax)
TG_PARITY_FAMILY(layer_norm)
TG_PARITY_FAMILY(rms_norm)
TG_PARITY_FAMILY(gelu)
TG_PARITY_FAMILY(glu)
TG_PARITY_FAMILY(swiglu)
TG_PARITY_FAMILY(losses)
TG_PARITY_FAMILY(binary_math)
TG_PARITY_FAMILY(scan)
TG_PARITY_FAMILY(picks)
TG_PARITY_FAMILY(einsum)
TG_PARITY_FAMILY(scatter)
TG_PARITY_FAMILY(repeat)
TG_PARITY_FAMILY(cross_entropy)
TG_PARITY_FAMILY(matmul)

TEST_CASE("the matmul fixtures have the documented shapes", "[parity][matmul]") {
  const tgt::Fixture m4("matmul/4d3d"), m1("matmul/1d3d");
  REQUIRE(m4.tensor("a").shape() == Shape{2, 1, 3, 4});
  REQUIRE(m4.tensor("b").shape() == Shape{5, 4, 6});
  REQUIRE(m4.tensor("out").shape() == Shape{2, 5, 3, 6});
  REQUIRE(m1.tensor("a").shape() == Shape{4});
  REQUIRE(m1.tensor("out").shape() == Shape{2, 3});
  REQUIRE(m1.tensor("db").shape() == Shape{2, 4, 3});
}
