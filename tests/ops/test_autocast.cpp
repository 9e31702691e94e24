// tests/ops/test_autocast.cpp — autocast's dtype decisions (ops/autocast/autocast.hpp): the guard's
// thread-local, nestable state; the three policies on every kind of argument; every line of the op
// table run through its op's hook, against PyTorch 1.13's CPU autocast on the same ops
// (tests/fixtures/autocast/decisions.safetensors, tools/make_autocast_fixtures.py); the
// parameter cast cache. Ops whose families have no bf16/f16 kernels yet are judged by the dtype
// they ran in (ran_in: an "unsupported dtype" error names it), so the decisions are tested before
// the kernels land. Not here: the small model end to end and the GPT-style steps
// (test_autocast_model.cpp), GradScaler (tests/nn/test_amp.cpp).
#include "fixtures.hpp"
#include "helpers.hpp"

#include "nn/attention.hpp"
#include "ops/attention/attention.hpp"
#include "ops/autocast/autocast.hpp"

#include <functional>
#include <string>
#include <thread>

using namespace tg;

namespace {

// The dtype an op ran in: its output's, or the reduced dtype its family's "unsupported dtype"
// error names (the autocast decision is made before the kernel is chosen).
DType ran_in(const std::function<Tensor()>& op) {
  try {
    return op().dtype();
  } catch (const Error& e) {
    const std::string m = e.what();
    for (DType d : {kBFloat16, kFloat16})
      if (m.find(std::string("unsupported dtype ") + dtype_name(d)) != std::string::npos) return d;
    throw;
  }
}

DType dtype_named(const std::string& name) {
  for (DType d : {kFloat32, kFloat64, kBFloat16, kFloat16, kInt64, kBool})
    if (name == dtype_name(d)) return d;
  FAIL("no dtype named " << name);
  return kFloat32;
}

Tensor f32(const Shape& s) { return randn(s, kFloat32); }
Tensor bf(const Shape& s) { return randn(s, kFloat32).to(kBFloat16); }

// One case per line of the op table: its op called on float32 inputs (lower_precision_fp,
// promote: one bfloat16 and one float32 input) or bfloat16 inputs (fp32), and the fixture key of
// PyTorch's decision on the same call ("" where PyTorch 1.13 has no such op).
struct TableCase {
  const char* op;
  const char* fixture_key;
  std::function<Tensor()> run;
};

std::vector<TableCase> table_cases() {
  const Tensor target = tensor(std::vector<int64_t>{0, 2, 4});
  const auto probs = [](const Shape& s) { return sigmoid(f32(s)).to(kBFloat16); };
  const auto logp = [](const Shape& s) { return log_softmax(f32(s), 1).to(kBFloat16); };
  return {
      {"matmul", "op:matmul",
       [] {
         return matmul(f32({2, 3, 4}), f32({2, 4, 5}));
       }},
      {"mm", "op:mm",
       [] {
         return mm(f32({2, 3}), f32({3, 4}));
       }},
      {"bmm", "op:bmm",
       [] {
         return bmm(f32({2, 3, 4}), f32({2, 4, 5}));
       }},
      {"linear", "op:linear1",
       [] {
         return linear(f32({2, 3}), f32({4, 3}), f32({4}));
       }},
      {"scaled_dot_product_attention", "",
       [] {
         return scaled_dot_product_attention(f32({1, 2, 4, 8}), f32({1, 2, 4, 8}),
                                             f32({1, 2, 4, 8}))
             .output;
       }},
      {"scaled_dot_product_attention_packed", "",
       [] {
         return scaled_dot_product_attention_packed(f32({1, 4, 3, 2, 8})).output;
       }},
      {"scaled_dot_product_attention_kv_packed", "",
       [] {
         return scaled_dot_product_attention_kv_packed(f32({1, 4, 2, 8}), f32({1, 4, 2, 2, 8}))
             .output;
       }},
      {"cross_entropy", "op:cross_entropy_bf16",
       [=] {
         return cross_entropy(bf({3, 5}), target);
       }},
      {"nll_loss", "op:nll_loss_bf16",
       [=] {
         return nll_loss(logp({3, 5}), target);
       }},
      {"mse_loss", "op:mse_loss_bf16",
       [] {
         return mse_loss(bf({2, 3}), bf({2, 3}));
       }},
      {"l1_loss", "op:l1_loss_bf16",
       [] {
         return l1_loss(bf({2, 3}), bf({2, 3}));
       }},
      {"smooth_l1_loss", "op:smooth_l1_loss_bf16",
       [] {
         return smooth_l1_loss(bf({2, 3}), bf({2, 3}));
       }},
      {"huber_loss", "op:huber_loss_bf16",
       [] {
         return huber_loss(bf({2, 3}), bf({2, 3}));
       }},
      {"binary_cross_entropy", "op:binary_cross_entropy_bf16",
       [=] {
         return binary_cross_entropy(probs({2, 3}), probs({2, 3}));
       }},
      {"binary_cross_entropy_with_logits", "op:binary_cross_entropy_with_logits_bf16",
       [=] {
         return binary_cross_entropy_with_logits(bf({2, 3}), probs({2, 3}));
       }},
      {"kl_div", "op:kl_div_bf16",
       [=] {
         return kl_div(logp({2, 3}), softmax(f32({2, 3}), 1).to(kBFloat16));
       }},
      {"prod", "op:prod_bf16",
       [] {
         return prod(bf({2, 3}));
       }},
      {"cat", "op:cat_mixed",
       [] {
         return cat({bf({2, 3}), f32({2, 3})});
       }},
      {"stack", "op:stack_mixed",
       [] {
         return stack({bf({2, 3}), f32({2, 3})});
       }},
  };
}

DType expected(autocast::Policy p, DType fast) {
  return p == autocast::Policy::LowerPrecisionFp ? fast : kFloat32;
}

}  // namespace

TEST_CASE("autocast: the guard enables, nests, disables and restores, per thread", "[autocast]") {
  REQUIRE_FALSE(is_autocast_enabled());
  REQUIRE(get_autocast_dtype() == kBFloat16);
  {
    AutocastGuard a(kBFloat16);
    REQUIRE(is_autocast_enabled());
    REQUIRE(get_autocast_dtype() == kBFloat16);
    {
      AutocastGuard b(kFloat16);
      REQUIRE(get_autocast_dtype() == kFloat16);
      {
        AutocastGuard off(false);  // keeps the outer dtype, as torch.autocast(enabled=False)
        REQUIRE_FALSE(is_autocast_enabled());
        REQUIRE(get_autocast_dtype() == kFloat16);
      }
      REQUIRE(is_autocast_enabled());
    }
    REQUIRE(get_autocast_dtype() == kBFloat16);
    bool other_thread = true;
    std::thread([&] { other_thread = is_autocast_enabled(); }).join();
    REQUIRE_FALSE(other_thread);
  }
  REQUIRE_FALSE(is_autocast_enabled());
  REQUIRE_THROWS_WITH(AutocastGuard(kFloat32),
                      "AutocastGuard: dtype float32: autocast runs in bfloat16 or float16");
  REQUIRE_FALSE(is_autocast_enabled());
}

TEST_CASE("autocast: the three policies on every kind of argument", "[autocast]") {
  manual_seed(0);
  const Tensor x = f32({2, 3}), d = randn({2, 3}, kFloat64), i = tensor(std::vector<int64_t>{1, 2});
  const Tensor b = x.to(kBFloat16), h = x.to(kFloat16);
  REQUIRE_FALSE(autocast::lower_precision_fp({x}).has_value());  // off: nothing changes
  AutocastGuard g(kBFloat16);
  auto lo = autocast::lower_precision_fp({x, d, i, Tensor(), b, h});
  REQUIRE(lo.has_value());
  REQUIRE((*lo)[0].dtype() == kBFloat16);
  REQUIRE((*lo)[1].dtype() == kFloat64);  // float64 is never cast
  REQUIRE((*lo)[2].same(i));
  REQUIRE_FALSE((*lo)[3].defined());
  REQUIRE((*lo)[4].same(b));
  REQUIRE((*lo)[5].dtype() == kBFloat16);
  REQUIRE((*lo)[0].to(kFloat32).to_vector<double>() ==
          b.to(kFloat32).to_vector<double>());  // rounded once
  REQUIRE_FALSE(autocast::lower_precision_fp({b, d, i}).has_value());
  auto hi = autocast::fp32({b, h, d, x});
  REQUIRE((*hi)[0].dtype() == kFloat32);
  REQUIRE((*hi)[1].dtype() == kFloat32);
  REQUIRE((*hi)[2].dtype() == kFloat64);
  REQUIRE((*hi)[3].same(x));
  REQUIRE_FALSE(autocast::fp32({x, d}).has_value());
  auto pm = autocast::promote({b, x, i});
  REQUIRE((*pm)[0].dtype() == kFloat32);
  REQUIRE((*pm)[1].same(x));
  REQUIRE_FALSE(autocast::promote({b, b}).has_value());
  REQUIRE((*autocast::promote({b, h}))[1].dtype() == kFloat32);  // bf16 with f16 promotes to f32
  REQUIRE_FALSE(autocast::promote({d, b}).has_value());          // float64 takes no part
}

TEST_CASE("autocast: the op table follows PyTorch 1.13's CPU lists", "[autocast]") {
  using autocast::Policy;
  REQUIRE(autocast::policy_of("linear") == Policy::LowerPrecisionFp);
  REQUIRE(autocast::policy_of("cross_entropy") == Policy::Fp32);
  REQUIRE(autocast::policy_of("cat") == Policy::Promote);
  REQUIRE_THROWS_WITH(autocast::policy_of("softmax"),
                      "autocast: op 'softmax' is not in the autocast table "
                      "(ops/autocast/autocast.cpp)");
  REQUIRE(std::string(autocast::policy_name(Policy::Fp32)) == "fp32");
  // every table line has a case below, and every case a table line
  std::vector<std::string> ops, cased;
  for (const auto& e : autocast::op_table()) ops.push_back(e.op);
  for (const auto& c : table_cases()) cased.push_back(c.op);
  REQUIRE(ops == cased);
}

TEST_CASE("autocast: every table op runs in the dtype PyTorch 1.13's CPU autocast gives it",
          "[autocast]") {
  tgt::Fixture f("autocast/decisions");
  manual_seed(1);
  for (const TableCase& c : table_cases()) {
    const autocast::Policy p = autocast::policy_of(c.op);
    INFO(c.op << " (" << autocast::policy_name(p) << ")");
    DType got;
    {
      AutocastGuard g(kBFloat16);
      got = ran_in(c.run);
    }
    REQUIRE(got == expected(p, kBFloat16));
    if (*c.fixture_key) REQUIRE(got == dtype_named(f.meta(c.fixture_key)));
    {
      AutocastGuard g(kFloat16);  // the same lists in float16
      REQUIRE(ran_in(c.run) == expected(p, kFloat16));
    }
    if (p != autocast::Policy::Promote) {  // outside any guard: the inputs' dtype again
      const DType outside = ran_in(c.run);
      REQUIRE(outside == (p == autocast::Policy::Fp32 ? kBFloat16 : kFloat32));
    }
  }
}

TEST_CASE("autocast: ops on no list keep their inputs' dtype, float64 is never cast",
          "[autocast]") {
  tgt::Fixture f("autocast/decisions");
  manual_seed(2);
  AutocastGuard g(kBFloat16);
  // einsum reaches matmul's hook, as PyTorch's reaches bmm's
  REQUIRE(ran_in([] {
            return einsum("bij,bjk->bik", {f32({2, 3, 4}), f32({2, 4, 5})});
          }) == dtype_named(f.meta("op:einsum")));
  const Tensor d = matmul(randn({2, 3}, kFloat64), randn({3, 2}, kFloat64));
  REQUIRE(d.dtype() == dtype_named(f.meta("op:matmul_float64")));
  const Tensor e = embedding(tensor(std::vector<int64_t>{1, 3}), f32({7, 8}));
  REQUIRE(e.dtype() == dtype_named(f.meta("op:embedding")));
  REQUIRE(exp(bf({2, 3})).dtype() == dtype_named(f.meta("op:exp_bf16")));
  REQUIRE(cat({bf({2, 3}), bf({1, 3})}).dtype() == dtype_named(f.meta("op:cat_bf16")));
  AutocastGuard off(false);  // a disabled region inside: no op casts
  REQUIRE(mse_loss(f32({2, 3}), f32({2, 3})).dtype() == kFloat32);
  REQUIRE(ran_in([] { return mse_loss(bf({2, 3}), bf({2, 3})); }) == kBFloat16);
  REQUIRE(linear(f32({2, 3}), f32({4, 3})).dtype() == kFloat32);
  REQUIRE(cat({bf({2, 3}), bf({1, 3})}).dtype() == kBFloat16);
}

TEST_CASE("autocast: a parameter is cast once per region, its gradient reaches it in float32",
          "[autocast]") {
  manual_seed(3);
  Tensor w = f32({3, 4}).requires_grad_();
  REQUIRE(autocast::cache_size() == 0);
  Tensor c1;
  {
    AutocastGuard g(kBFloat16);
    c1 = autocast::lower_precision_fp({w})->at(0);
    {
      AutocastGuard inner(kBFloat16);  // a nested exit keeps the cache
      REQUIRE(autocast::lower_precision_fp({w})->at(0).same(c1));
    }
    REQUIRE(autocast::cache_size() == 1);
    REQUIRE(autocast::lower_precision_fp({w})->at(0).same(c1));
    const Tensor x = f32({2, 4});  // an op's hook reads the same cache: linear's weight
    REQUIRE(autocast::cast("linear", {&x, &w, &w})->at(1).same(c1));
    // not cached: a non-leaf, a tensor without grad, a view, another target dtype
    Tensor nl = w * 1.0f, ng = f32({3, 4}), view = narrow(w, 0, 0, 2);
    REQUIRE_FALSE(
        autocast::lower_precision_fp({nl})->at(0).same(autocast::lower_precision_fp({nl})->at(0)));
    autocast::lower_precision_fp({ng});
    autocast::lower_precision_fp({view});
    REQUIRE(autocast::cache_size() == 1);
  }
  REQUIRE(autocast::cache_size() == 0);  // the outermost exit clears it
  // the cast is recorded: w's gradient is float32, d(sum(to_f32(to_bf16(w))))/dw = 1
  c1.to(kFloat32).sum().backward();
  REQUIRE(w.grad().dtype() == kFloat32);
  REQUIRE(w.grad().to_vector<double>() == std::vector<double>(12, 1.0));
  {
    AutocastGuard g(kBFloat16, true, /*cache_enabled=*/false);
    autocast::lower_precision_fp({w});
    REQUIRE(autocast::cache_size() == 0);
  }
}

TEST_CASE("autocast: a cached cast is made again after an in-place write or a backward",
          "[autocast]") {
  manual_seed(4);
  Tensor w = f32({2, 2}).requires_grad_();
  AutocastGuard g(kBFloat16);
  Tensor c1 = autocast::lower_precision_fp({w})->at(0);
  {
    NoGradGuard ng;
    w.add_(1.0);  // an optimizer step: the version counter moves
  }
  Tensor c2 = autocast::lower_precision_fp({w})->at(0);
  REQUIRE_FALSE(c2.same(c1));
  REQUIRE(c2.to(kFloat32).to_vector<double>() ==
          w.detach().to(kBFloat16).to(kFloat32).to_vector<double>());
  REQUIRE(autocast::lower_precision_fp({w})->at(0).same(c2));
  c2.to(kFloat32).sum().backward();  // frees the cast's node
  Tensor c3 = autocast::lower_precision_fp({w})->at(0);
  REQUIRE_FALSE(c3.same(c2));
  c3.to(kFloat32).sum().backward();  // a second backward in the same region works
  REQUIRE(w.grad().to_vector<double>() == std::vector<double>(4, 2.0));
  {
    NoGradGuard ng;  // a cast made without grad mode is not cached
    Tensor w2 = f32({2, 2}).requires_grad_();
    autocast::lower_precision_fp({w2});
    REQUIRE(autocast::cache_size() == 1);
  }
}
