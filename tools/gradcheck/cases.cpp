// tools/gradcheck/cases.cpp — the --op builders: one per op of ops/ops.hpp (elementwise,
// reductions, linear algebra, shape, softmax, masking, layer_norm, embedding, dropout,
// cross_entropy), functional attention with every mask kind, MultiheadAttention, the Transformer
// encoder and decoder layers, and `broken_square` (a deliberately wrong backward, to see a
// failure). Each builder turns CaseArgs into float64 leaves and a function of them.
// Deliberately not here: option parsing (options.cpp), running and printing (main.cpp).
#include "tools/gradcheck/builders.hpp"

#include "autograd/tape.hpp"
#include "nn/attention.hpp"
#include "nn/transformer.hpp"
#include "ops/attention/attention.hpp"
#include "ops/ops.hpp"
#include "tools/unary_samples.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace tgc {
using tg::Shape;
using tg::Tensor;
namespace {

// ---- inputs ----
// The unary ops' input: --values when given, else N(0,1) (or positive) of --shape.
// The input domains of the unary cases, numbered as the list's (tg::kern::UnDomain).
enum Domain { kAny, kPositive, kUnit, kAboveOne };
static_assert(kAboveOne == static_cast<int>(tg::kern::UnDomain::kAboveOne));
Tensor unary_input(const CaseArgs& a, Domain d) {
  if (!a.values.empty()) return tg::tensor(a.values).requires_grad_();
  const Shape s = a.shape.value_or(Shape{2, 3});
  if (d == kAny) return leaf(s);
  if (d == kPositive) return positive_leaf(s);
  tg::NoGradGuard ng;
  if (d == kAboveOne) return (positive_leaf(s) + 0.6).detach().requires_grad_();  // > 1.1
  return (tg::rand(s, tg::kFloat64) * 1.8 - 0.9).detach().requires_grad_();       // (-0.9, 0.9)
}
// Bool of shape s, true with probability p.
Tensor random_bool(const Shape& s, double p) {
  Tensor u = tg::rand(s, tg::kFloat64);
  std::vector<bool> v;
  for (double x : u.to_vector<double>()) v.push_back(x < p);
  return tg::tensor(v, s);
}
// ---- elementwise ----
void add_elementwise(std::vector<OpInfo>& r) {
  struct U {
    const char* name;
    Domain domain;
    Tensor (*f)(const Tensor&);
    const char* op = nullptr;  // the public op, when the name is not it
  };
  // The list's ops (tools/unary_samples.hpp), then calls with other parameters or inputs.
  static const U variants[] = {
      {"clamp_narrow", kAny, [](const Tensor& x) { return tg::clamp(x, -0.5, 0.5); }, "clamp"},
      {"softplus_b2_t1.5", kAny, [](const Tensor& x) { return tg::softplus(x, 2.0, 1.5); },
       "softplus"},
      {"leaky_relu_0.1", kAny, [](const Tensor& x) { return tg::leaky_relu(x, 0.1); },
       "leaky_relu"},
      {"elu_0.7", kAny, [](const Tensor& x) { return tg::elu(x, 0.7); }, "elu"},
      {"selu", kAny, [](const Tensor& x) { return tg::selu(x); }},
      {"hardswish_3x", kAny, [](const Tensor& x) { return tg::hardswish(tg::mul(x, 3.0)); },
       "hardswish"},
      {"hardsigmoid_3x", kAny, [](const Tensor& x) { return tg::hardsigmoid(tg::mul(x, 3.0)); },
       "hardsigmoid"},
      {"hardtanh_-0.5_0.8", kAny, [](const Tensor& x) { return tg::hardtanh(x, -0.5, 0.8); },
       "hardtanh"},
      {"relu6", kAny, [](const Tensor& x) { return tg::relu6(tg::mul(x, 4.0)); }},
      {"glu", kAny, [](const Tensor& x) { return tg::glu(x, -1); }},
      {"rsub", kAny, [](const Tensor& x) { return tg::rsub(2.5, x); }},
      {"rdiv", kPositive, [](const Tensor& x) { return tg::rdiv(-2.0, x); }},
      {"clamp_min", kAny, [](const Tensor& x) { return tg::clamp_min(x, -0.3); }},
      {"clamp_max", kAny, [](const Tensor& x) { return tg::clamp_max(x, 0.4); }},
  };
  for (const tgu::UnarySample& u : tgu::unary_samples())
    r.push_back({u.name,
                 "--shape S | --values v1,v2,...",
                 [u](const CaseArgs& a) {
                   return one(unary_input(a, static_cast<Domain>(u.domain)), u.call);
                 },
                 {u.op_name}});
  for (const U& u : variants)
    r.push_back({u.name,
                 "--shape S | --values v1,v2,...",
                 [u](const CaseArgs& a) { return one(unary_input(a, u.domain), u.f); },
                 {u.op ? u.op : u.name}});
  struct Bn {
    const char* name;
    int domain;  // 0 any, 1 a positive (pow), 2 b away from 0 (div)
    Tensor (*f)(const Tensor&, const Tensor&);
    const char* op = nullptr;  // the public op, when the name is not it
  };
  static const Bn binary[] = {
      {"add", 0, [](const Tensor& x, const Tensor& y) { return tg::add(x, y); }},
      {"sub", 0, [](const Tensor& x, const Tensor& y) { return tg::sub(x, y); }},
      {"mul", 0, [](const Tensor& x, const Tensor& y) { return tg::mul(x, y); }},
      {"div", 2, [](const Tensor& x, const Tensor& y) { return tg::div(x, y); }},
      {"pow_tensor", 1, [](const Tensor& x, const Tensor& y) { return tg::pow(x, y); }, "pow"},
      {"maximum", 0, [](const Tensor& x, const Tensor& y) { return tg::maximum(x, y); }},
      {"minimum", 0, [](const Tensor& x, const Tensor& y) { return tg::minimum(x, y); }},
      {"fmod", 2, [](const Tensor& x, const Tensor& y) { return tg::fmod(x, y); }},
      {"remainder", 2, [](const Tensor& x, const Tensor& y) { return tg::remainder(x, y); }},
      {"copysign", 0, [](const Tensor& x, const Tensor& y) { return tg::copysign(x, y); }},
      {"logaddexp", 0, [](const Tensor& x, const Tensor& y) { return tg::logaddexp(x, y); }},
      {"lerp", 0, [](const Tensor& x, const Tensor& y) { return tg::lerp(x, y, 0.3); }},
  };
  for (const Bn& b : binary)
    r.push_back({b.name,
                 "--shape A --shape2 B (broadcasting)",
                 [b](const CaseArgs& a) {
                   const Shape sa = a.shape.value_or(Shape{2, 3}), sb = a.shape2.value_or(sa);
                   Tensor x = b.domain == 1 ? positive_leaf(sa) : leaf(sa);
                   Tensor y = b.domain == 2 ? positive_leaf(sb) : leaf(sb);
                   if (b.domain == 2) {  // ±(|N| + 0.5): both signs, away from 0
                     double* p = y.data<double>();
                     for (int64_t i = 0; i < y.numel(); i += 2) p[i] = -p[i];
                   }
                   return two(x, y, b.f);
                 },
                 {b.op ? b.op : b.name}});
  r.push_back(
      {"broken_square", "deliberately wrong backward, to see a failure: forward x², backward 3x",
       [](const CaseArgs& a) {
         return one(unary_input(a, kAny), [](const Tensor& x) {
           Tensor out = x.detach() * x.detach(), saved = x.detach();
           tg::record("broken_square", out, {x}, [saved](const Tensor& g) -> std::vector<Tensor> {
             return {g * saved * 3.0};  // wrong on purpose: d(x²)/dx = 2x
           });
           return out;
         });
       }});
}

// ---- reductions, linear algebra ----
void add_reductions(std::vector<OpInfo>& r) {
  const char* red_help = "--shape S [--dims d1,d2] [--keepdim]";
  r.push_back({"sum", red_help, [](const CaseArgs& a) {
                 return one(leaf(a.shape.value_or(Shape{2, 3, 4})),
                            [a](const Tensor& x) { return tg::sum(x, a.dims, a.keepdim); });
               }});
  r.push_back({"mean", red_help, [](const CaseArgs& a) {
                 return one(leaf(a.shape.value_or(Shape{2, 3, 4})),
                            [a](const Tensor& x) { return tg::mean(x, a.dims, a.keepdim); });
               }});
  r.push_back({"max", red_help, [](const CaseArgs& a) {
                 return one(leaf(a.shape.value_or(Shape{2, 3, 4})),
                            [a](const Tensor& x) { return tg::max(x, a.dims, a.keepdim); });
               }});
  r.push_back({"min", red_help, [](const CaseArgs& a) {
                 return one(leaf(a.shape.value_or(Shape{2, 3, 4})),
                            [a](const Tensor& x) { return tg::min(x, a.dims, a.keepdim); });
               }});
  // along one dim: --dims d (default -1)
  struct Scan {
    const char* name;
    Tensor (*f)(const Tensor&, int64_t);
  };
  static const Scan scans[] = {
      {"prod", [](const Tensor& x, int64_t d) { return tg::prod(x, d); }},
      {"cumprod", [](const Tensor& x, int64_t d) { return tg::cumprod(x, d); }},
      {"cumsum", [](const Tensor& x, int64_t d) { return tg::cumsum(x, d); }},
      {"cummax", [](const Tensor& x, int64_t d) { return tg::cummax(x, d).values; }},
      {"cummin", [](const Tensor& x, int64_t d) { return tg::cummin(x, d).values; }},
      {"logcumsumexp", [](const Tensor& x, int64_t d) { return tg::logcumsumexp(x, d); }},
  };
  for (const Scan& sc : scans)
    r.push_back({sc.name, "--shape S [--dims d]", [sc](const CaseArgs& a) {
                   const int64_t d = a.dims.empty() ? -1 : a.dims[0];
                   return one(leaf(a.shape.value_or(Shape{3, 4})),
                              [sc, d](const Tensor& x) { return sc.f(x, d); });
                 }});
  r.push_back({"logsumexp", red_help, [](const CaseArgs& a) {
                 return one(leaf(a.shape.value_or(Shape{2, 3, 4})),
                            [a](const Tensor& x) { return tg::logsumexp(x, a.dims, a.keepdim); });
               }});
  r.push_back({"std", red_help, [](const CaseArgs& a) {
                 return one(leaf(a.shape.value_or(Shape{3, 4})),
                            [a](const Tensor& x) { return tg::std(x, a.dims, a.keepdim); });
               }});
  r.push_back({"var", "--shape S [--dims d] [--keepdim] [--correction 0|1]", [](const CaseArgs& a) {
                 return one(leaf(a.shape.value_or(Shape{3, 4})), [a](const Tensor& x) {
                   return tg::var(x, a.dims, a.keepdim, a.correction);
                 });
               }});
  r.push_back({"std_mean", "--shape S [--dims d] [--keepdim] [--correction c]: (std, mean) joined",
               [](const CaseArgs& a) {
                 return one(leaf(a.shape.value_or(Shape{3, 4})), [a](const Tensor& x) {
                   auto [sd, mu] = tg::std_mean(x, a.dims, a.keepdim, a.correction);
                   return joined({sd, mu});
                 });
               }});
}

void add_linalg(std::vector<OpInfo>& r) {
  r.push_back({"mm", "--shape N,K --shape2 K,M", [](const CaseArgs& a) {
                 return two(leaf(a.shape.value_or(Shape{2, 3})),
                            leaf(a.shape2.value_or(Shape{3, 4})),
                            [](const Tensor& x, const Tensor& y) { return tg::mm(x, y); });
               }});
  r.push_back(
      {"einsum",
       "a (2,3,4), b (2,4,3): 'bij,bjk->bik', 'bii->bi' (diagonal), '...j,...j->...' and implicit "
       "'bij,bkj' joined",
       [](const CaseArgs& a) {
         return two(leaf({2, 3, 4}), leaf({2, 4, 3}), [](const Tensor& x, const Tensor& y) {
           const Tensor sq = tg::einsum("bij,bjk->bik", {x, y});
           return joined({sq, tg::einsum("bii->bi", {sq}),
                          tg::einsum("...j,...j->...", {x, tg::transpose(y, 1, 2)}),
                          tg::einsum("bij,bkj", {x, x})});
         });
       }});
  r.push_back({"matmul", "--shape A --shape2 B (PyTorch's matmul rules)", [](const CaseArgs& a) {
                 return two(leaf(a.shape.value_or(Shape{2, 3})),
                            leaf(a.shape2.value_or(Shape{3, 4})),
                            [](const Tensor& x, const Tensor& y) { return tg::matmul(x, y); });
               }});
  r.push_back({"bmm", "--shape B,N,K --shape2 B,K,M", [](const CaseArgs& a) {
                 return two(leaf(a.shape.value_or(Shape{2, 2, 3})),
                            leaf(a.shape2.value_or(Shape{2, 3, 4})),
                            [](const Tensor& x, const Tensor& y) { return tg::bmm(x, y); });
               }});
  r.push_back({"linear", "--shape ...,Cin --shape2 Cout,Cin [--no-bias]", [](const CaseArgs& a) {
                 const Shape sw = a.shape2.value_or(Shape{5, 4});
                 BuiltCase c;
                 c.inputs = {leaf(a.shape.value_or(Shape{2, sw.back()})), leaf(sw)};
                 c.names = {"x", "weight"};
                 if (!a.no_bias) {
                   c.inputs.push_back(leaf({sw[0]}));
                   c.names.push_back("bias");
                 }
                 c.fn = [](const std::vector<Tensor>& in) {
                   return tg::linear(in[0], in[1], in.size() > 2 ? in[2] : Tensor());
                 };
                 return c;
               }});
}

void add_reduce_linalg(std::vector<OpInfo>& r) {
  add_reductions(r);
  add_linalg(r);
}

// ---- neural-network functions ----
// softmax, log_softmax, softmin, masked_fill, where.
void add_softmax_and_masks(std::vector<OpInfo>& r) {
  r.push_back({"softmax", "--shape S [--dim d]", [](const CaseArgs& a) {
                 return one(leaf(a.shape.value_or(Shape{3, 4})),
                            [d = a.dim](const Tensor& x) { return tg::softmax(x, d); });
               }});
  r.push_back({"log_softmax", "--shape S [--dim d]", [](const CaseArgs& a) {
                 return one(leaf(a.shape.value_or(Shape{3, 4})),
                            [d = a.dim](const Tensor& x) { return tg::log_softmax(x, d); });
               }});
  r.push_back({"softmin", "--shape S [--dim d]", [](const CaseArgs& a) {
                 return one(leaf(a.shape.value_or(Shape{3, 4})),
                            [d = a.dim](const Tensor& x) { return tg::softmin(x, d); });
               }});
  r.push_back({"masked_fill", "--shape S [--shape2 mask shape, broadcast]", [](const CaseArgs& a) {
                 const Shape s = a.shape.value_or(Shape{3, 4});
                 Tensor x = leaf(s), m = random_bool(a.shape2.value_or(s), 0.4);
                 return one(x, [m](const Tensor& t) { return tg::masked_fill(t, m, -2.5); });
               }});
  r.push_back({"where", "--shape S (cond and a) [--shape2 b, broadcast]", [](const CaseArgs& a) {
                 const Shape s = a.shape.value_or(Shape{3, 4});
                 Tensor c = random_bool(s, 0.5);
                 return two(leaf(s), leaf(a.shape2.value_or(s)),
                            [c](const Tensor& x, const Tensor& y) { return tg::where(c, x, y); });
               }});
}

// apply_rotary, layer_norm, rms_norm.
void add_rotary_and_norms(std::vector<OpInfo>& r) {
  // layer_norm (weight and bias) or rms_norm (weight), over the last dim.
  auto norm_case = [](bool rms) {
    return [rms](const CaseArgs& a) {
      const Shape s = a.shape.value_or(Shape{2, 5});
      BuiltCase c;
      c.inputs = {leaf(s)};
      c.names = {"x"};
      if (!a.no_bias) {
        c.inputs.push_back(leaf({s.back()}));
        c.names.push_back("weight");
        if (!rms) {
          c.inputs.push_back(leaf({s.back()}));
          c.names.push_back("bias");
        }
      }
      c.fn = [rms](const std::vector<Tensor>& in) {
        const Tensor w = in.size() > 1 ? in[1] : Tensor();
        if (rms) return tg::rms_norm(in[0], {in[0].size(-1)}, w, 1e-3);
        return tg::layer_norm(in[0], {in[0].size(-1)}, w, in.size() > 2 ? in[2] : Tensor());
      };
      return c;
    };
  };
  r.push_back(
      {"apply_rotary",
       "--shape ...,T,D (D even; R = D: half-split with the tables differentiated, interleaved "
       "with constant tables)",
       [](const CaseArgs& a) {
         const Shape s = a.shape.value_or(Shape{2, 3, 6});
         const int64_t T = s[s.size() - 2], h = s.back() / 2;
         BuiltCase c;
         c.inputs = {leaf(s), leaf({T, h}), leaf({T, h})};
         c.names = {"x", "cos", "sin"};
         // composed (the tables' gradients) plus fused (constant tables, interleaved)
         const Tensor ct = tg::randn({T, h}, tg::kFloat64), st = tg::randn({T, h}, tg::kFloat64);
         c.fn = [ct, st](const std::vector<Tensor>& in) {
           return tg::apply_rotary(in[0], in[1], in[2]) + tg::apply_rotary(in[0], ct, st, true);
         };
         return c;
       }});
  r.push_back({"layer_norm", "--shape ...,D (normalised over D) [--no-bias: no weight/bias]",
               norm_case(false)});
  r.push_back(
      {"rms_norm", "--shape ...,D (normalised over D) [--no-bias: no weight]", norm_case(true)});
}

void add_embedding_and_dropout(std::vector<OpInfo>& r) {
  r.push_back(
      {"embedding", "--shape indices --vocab V --embed C [--padding-idx p]", [](const CaseArgs& a) {
         Tensor idx = tg::randint(0, a.vocab, a.shape.value_or(Shape{2, 3}));
         if (a.padding_idx && (*a.padding_idx >= a.vocab || *a.padding_idx < -a.vocab))
           throw UsageError(fmt::format("--padding-idx {} is outside the vocabulary (V = {})",
                                        *a.padding_idx, a.vocab));
         if (a.padding_idx) {
           const int64_t p = *a.padding_idx < 0 ? *a.padding_idx + a.vocab : *a.padding_idx;
           idx.data<int64_t>()[0] = p;  // the padding row is used and gets no gradient
         }
         auto pi = a.padding_idx;
         // The padding row gets no gradient by design: it is held constant (masked_fill),
         // so its numerical gradient is 0 too and the other rows are checked.
         std::vector<bool> rows(a.vocab, false);
         if (pi) rows.at(*pi < 0 ? *pi + a.vocab : *pi) = true;
         Tensor pad_row = tg::tensor(rows, {a.vocab, 1});
         return one(
             leaf({a.vocab, a.embed}),
             [idx, pi, pad_row](const Tensor& w) {
               return tg::embedding(idx, pi ? tg::masked_fill(w, pad_row, 0.5) : w, pi);
             },
             "weight");
       }});
  r.push_back({"dropout", "--shape S [--dropout p (0.3)]; the mask is drawn from a fixed seed",
               [](const CaseArgs& a) {
                 const double p = a.dropout > 0 ? a.dropout : 0.3;
                 return one(leaf(a.shape.value_or(Shape{4, 5})), [p](const Tensor& x) {
                   tg::manual_seed(1234);  // every evaluation draws the same mask
                   return tg::dropout(x, p);
                 });
               }});
}

// cross_entropy and the other losses.
void add_losses(std::vector<OpInfo>& r) {
  r.push_back({"cross_entropy",
               "--shape N,C[,d...] [--reduction mean|sum|none] [--smoothing e] [--ignore-index i]",
               [](const CaseArgs& a) {
                 const Shape s = a.shape.value_or(Shape{4, 5});
                 if (s.size() < 2) throw UsageError("--op cross_entropy needs --shape N,C[,d...]");
                 Shape ts{s[0]};
                 ts.insert(ts.end(), s.begin() + 2, s.end());
                 Tensor t = tg::randint(0, s[1], ts);
                 tg::CrossEntropyOptions o;
                 o.reduction = a.reduction == "sum"    ? tg::Reduction::Sum
                               : a.reduction == "none" ? tg::Reduction::None
                                                       : tg::Reduction::Mean;
                 o.label_smoothing = a.smoothing;
                 if (a.ignore_index) {
                   o.ignore_index = *a.ignore_index;
                   t.data<int64_t>()[0] = *a.ignore_index;  // one ignored row
                 }
                 return one(
                     leaf(s), [t, o](const Tensor& x) { return tg::cross_entropy(x, t, o); },
                     "logits");
               }});  // the losses of ops/loss/composed.cpp: input and target both differentiated where
                     // PyTorch does
  struct L {
    const char* name;
    Tensor (*f)(const Tensor&, const Tensor&);
    int domain;  // 0 any, 1 probabilities (input and target in (0, 1)), 2 log-probs vs probs
  };
  static const L losses[] = {
      {"mse_loss", [](const Tensor& x, const Tensor& t) { return tg::mse_loss(x, t); }, 0},
      {"l1_loss", [](const Tensor& x, const Tensor& t) { return tg::l1_loss(x, t); }, 0},
      {"smooth_l1_loss",
       [](const Tensor& x, const Tensor& t) {
         return tg::smooth_l1_loss(x, t, tg::Reduction::Mean, 0.5);
       },
       0},
      {"huber_loss",
       [](const Tensor& x, const Tensor& t) {
         return tg::huber_loss(x, t, tg::Reduction::Sum, 0.5);
       },
       0},
      {"binary_cross_entropy",
       [](const Tensor& x, const Tensor& t) { return tg::binary_cross_entropy(x, t); }, 1},
      {"binary_cross_entropy_with_logits",
       [](const Tensor& x, const Tensor& t) {
         return tg::binary_cross_entropy_with_logits(x, tg::sigmoid(t));
       },
       0},
      {"kl_div",
       [](const Tensor& x, const Tensor& t) {
         return tg::kl_div(tg::log_softmax(x, -1), tg::softmax(t, -1), tg::Reduction::BatchMean);
       },
       0},
      {"cosine_similarity",
       [](const Tensor& x, const Tensor& t) { return tg::cosine_similarity(x, t, -1); }, 0},
  };
  for (const L& l : losses)
    r.push_back({l.name, "--shape S (input and target)", [l](const CaseArgs& a) {
                   const Shape s = a.shape.value_or(Shape{3, 4});
                   Tensor x = leaf(s), t = leaf(s);
                   if (l.domain == 1) {
                     tg::NoGradGuard ng;
                     x = tg::sigmoid(x).detach().requires_grad_();
                     t = tg::sigmoid(t).detach().requires_grad_();
                   }
                   return two(x, t, l.f, "input", "target");
                 }});
}

void add_reordering(std::vector<OpInfo>& r) {
  // reordering and repeating (ops/shape/repeat.cpp), one case each
  struct Rp {
    const char* name;
    Tensor (*f)(const Tensor&);
  };
  static const Rp reorder[] = {
      {"flip",
       [](const Tensor& x) {
         return tg::flip(x, {0, 1});
       }},
      {"roll",
       [](const Tensor& x) {
         return tg::roll(x, {1, -2}, {0, 1});
       }},
      {"repeat",
       [](const Tensor& x) {
         return tg::repeat(x, {2, 1, 3});
       }},
      {"repeat_interleave", [](const Tensor& x) { return tg::repeat_interleave(x, 2, 1); }},
      {"pad",
       [](const Tensor& x) {
         return tg::pad(x, {2, 1}, "reflect") + tg::pad(x, {1, 2}, "circular") +
                tg::pad(x, {3, 0}, "replicate") + tg::pad(x, {1, 2}, "constant", 0.5);
       }},
  };
  for (const Rp& rp : reorder)
    r.push_back({rp.name, "--shape S (2-D)", [rp](const CaseArgs& a) {
                   return one(leaf(a.shape.value_or(Shape{3, 4})), rp.f);
                 }});
  r.push_back(
      {"nll_loss", "--shape N,C (class weights, one target ignored)", [](const CaseArgs& a) {
         const Shape s = a.shape.value_or(Shape{4, 3});
         if (s.size() != 2) throw UsageError("--op nll_loss needs --shape N,C");
         Tensor t = tg::randint(0, s[1], {s[0]});
         t.data<int64_t>()[0] = -100;
         Tensor w = tg::add(tg::rand({s[1]}, tg::kFloat64), 0.5);
         return one(
             leaf(s), [t, w](const Tensor& x) { return tg::nll_loss(x, t, w); }, "input");
       }});
  r.push_back(
      {"normalize", "--shape S (p 2 over dim 1, then p 3 over dim 0)", [](const CaseArgs& a) {
         return one(leaf(a.shape.value_or(Shape{3, 4})),
                    [](const Tensor& x) { return tg::normalize(x) + tg::normalize(x, 3.0, 0); });
       }});
}

// Every neural-network function, in registry order.
void add_nn_functions(std::vector<OpInfo>& r) {
  add_softmax_and_masks(r);
  add_rotary_and_norms(r);
  add_embedding_and_dropout(r);
  add_losses(r);
  add_reordering(r);
}

}  // namespace

void add_attention(std::vector<OpInfo>& r);  // attention_cases.cpp
void add_shape(std::vector<OpInfo>& r);      // shape_cases.cpp
void add_index(std::vector<OpInfo>& r);      // index_cases.cpp

const std::vector<OpInfo>& op_registry() {
  static const std::vector<OpInfo> reg = [] {
    std::vector<OpInfo> r;
    add_elementwise(r);
    add_reduce_linalg(r);
    add_shape(r);
    add_nn_functions(r);
    add_index(r);
    add_attention(r);
    return r;
  }();
  return reg;
}

BuiltCase build_case(const CaseArgs& a, uint64_t seed) {
  if (a.op.empty()) throw UsageError("no --op given (try --list, or --all)");
  for (const OpInfo& op : op_registry())
    if (op.name == a.op) {
      tg::manual_seed(seed);
      BuiltCase c = op.build(a);
      if (c.names.size() != c.inputs.size()) throw std::logic_error("case input names");
      return c;
    }
  std::string names;
  for (const OpInfo& op : op_registry()) names += (names.empty() ? "" : ", ") + op.name;
  throw UsageError(fmt::format("unknown --op '{}'; known ops: {}", a.op, names));
}

std::vector<std::string> all_covered_ops() {
  std::vector<std::string> out;
  for (const TableCase& t : all_cases()) {
    const std::string op = parse_case(t.args).op;
    for (const OpInfo& info : op_registry()) {
      if (info.name != op) continue;
      for (const std::string& c : info.covers.empty() ? std::vector<std::string>{op} : info.covers)
        if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
    }
  }
  return out;
}

}  // namespace tgc
