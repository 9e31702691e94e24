// tests/autograd/test_activation_checkpoint.cpp — tg::checkpoint: gradients equal to the
// un-checkpointed ones bit for bit (float64, with dropout: the generator is restored), the piece's
// nodes freed after the forward, nesting, tg::grad capturing parameters read inside, post-
// accumulate hooks once per parameter, create_graph through it (an HVP, gradgradcheck), and the
// error when fn computes something else the second time.
#include "helpers.hpp"

#include "autograd/activation_checkpoint.hpp"
#include "ops/functional/functional.hpp"

using namespace tg;

namespace {
struct Block {
  Tensor W1, b1, W2;
  Tensor operator()(const Tensor& x) const {
    return linear(dropout(gelu(linear(x, W1, b1)), 0.3), W2);
  }
};
Block make_block() { return {tgt::leaf({6, 4}, 0.5), tgt::leaf({6}), tgt::leaf({4, 6}, 0.5)}; }
std::vector<double> flat(const Tensor& t) { return t.contiguous().to_vector<double>(); }
}  // namespace

TEST_CASE("checkpoint: gradients equal the un-checkpointed ones bit for bit, with dropout") {
  manual_seed(1);
  Block a = make_block(), b = make_block();
  Tensor x = tgt::leaf({3, 4});
  auto run = [&](bool ckpt) {
    for (Tensor* t : {&a.W1, &a.b1, &a.W2, &x}) t->reset_grad();
    manual_seed(7);
    Tensor h = tanh(x);
    for (int i = 0; i < 2; ++i) {
      const Block& blk = i == 0 ? a : b;
      h = ckpt ? checkpoint([&blk](const std::vector<Tensor>& in) { return blk(in[0]); }, {h})
               : blk(h);
    }
    Tensor loss = (h * h).sum();
    loss.backward();
    return std::vector<std::vector<double>>{flat(x.grad()),    flat(a.W1.grad()),
                                            flat(a.b1.grad()), flat(a.W2.grad()),
                                            flat(b.W1.grad()), {loss.item<double>()}};
  };
  for (Tensor* t : {&b.W1, &b.b1, &b.W2}) t->reset_grad();
  const auto plain = run(false);
  for (Tensor* t : {&b.W1, &b.b1, &b.W2}) t->reset_grad();
  const auto ckpt = run(true);
  REQUIRE(plain.size() == ckpt.size());
  for (size_t i = 0; i < plain.size(); ++i) REQUIRE(plain[i] == ckpt[i]);  // exact
}

TEST_CASE("checkpoint: the piece's nodes are freed after the forward, only the output's kept") {
  manual_seed(2);
  Block blk = make_block();
  Tensor x = tgt::leaf({3, 4});
  const int64_t before = Tape::live_count();
  Tensor plain = blk(blk(x));
  const int64_t plain_nodes = Tape::live_count() - before;
  plain = Tensor();
  Tensor c = checkpoint([&](const std::vector<Tensor>& in) { return blk(blk(in[0])); }, {x});
  const int64_t ckpt_nodes = Tape::live_count() - before;
  REQUIRE(plain_nodes >= 8);
  REQUIRE(ckpt_nodes == 1);  // the checkpoint node alone
  REQUIRE(std::string(c.grad_fn()->op) == "checkpoint");
}

TEST_CASE("checkpoint: nested checkpoints, tg::grad captures the parameters read inside") {
  manual_seed(3);
  Block blk = make_block();
  Tensor x = tgt::leaf({3, 4});
  auto inner = [&](const std::vector<Tensor>& in) { return blk(in[0]); };
  auto outer = [&](const std::vector<Tensor>& in) {
    return checkpoint(inner, {tanh(checkpoint(inner, {in[0]}))});
  };
  manual_seed(5);
  const std::vector<Tensor> want = grad({blk(tanh(blk(x))).sum()}, {x, blk.W1, blk.W2});
  manual_seed(5);
  const std::vector<Tensor> got = grad({checkpoint(outer, {x}).sum()}, {x, blk.W1, blk.W2});
  for (size_t i = 0; i < want.size(); ++i) REQUIRE(flat(got[i]) == flat(want[i]));
  REQUIRE_FALSE(blk.W1.grad().defined());  // captured, not accumulated
}

TEST_CASE("checkpoint: a post-accumulate hook fires once per parameter per backward") {
  manual_seed(4);
  Block blk = make_block();
  int fired = 0;
  blk.W1.register_post_accumulate_grad_hook([&](const Tensor&) { ++fired; });
  Tensor x = tgt::leaf({2, 4});
  auto f = [&](const std::vector<Tensor>& in) { return blk(blk(in[0])); };  // W1 used twice
  checkpoint(f, {x}).sum().backward();
  REQUIRE(fired == 1);
}

TEST_CASE("checkpoint under create_graph: an HVP and gradgradcheck through it") {
  manual_seed(6);
  Block blk = make_block();
  const Tensor x = randn({3, 4}, kFloat64);
  const Tensor v1 = randn({6, 4}, kFloat64), v2 = randn({4, 6}, kFloat64);
  auto loss = [&](bool ckpt) {
    return [&, ckpt](const std::vector<Tensor>& p) {
      auto body = [&](const std::vector<Tensor>& in) {
        return linear(tanh(linear(in[0], p[0])), p[1]);
      };
      Tensor y = ckpt ? checkpoint(body, {x}) : body({x});
      return (y * y).sum();
    };
  };
  auto [l1, hv1] = func::hvp(loss(false), {blk.W1, blk.W2}, {v1, v2});
  auto [l2, hv2] = func::hvp(loss(true), {blk.W1, blk.W2}, {v1, v2});
  // first-order gradients are bit for bit (above); the second order sums the recomputed piece's
  // contributions in another order, so to float64 rounding
  tgt::require_close(hv2[0], hv1[0], 1e-12, 1e-12, "H·v W1");
  tgt::require_close(hv2[1], hv1[1], 1e-12, 1e-12, "H·v W2");
  GradcheckReport r = gradgradcheck(
      [&](const std::vector<Tensor>& in) {
        return checkpoint([](const std::vector<Tensor>& a) { return tanh(a[0] * a[1]); },
                          {in[0], in[1]});
      },
      {tgt::leaf({3}), tgt::leaf({3})});
  INFO(r.str());
  REQUIRE(r.passed);
}

TEST_CASE("checkpoint: fn that computes something else when run again is an error") {
  Tensor x = tensor(std::vector<double>{1, 2}).requires_grad_();
  int calls = 0;
  Tensor y = checkpoint(
      [&](const std::vector<Tensor>& in) { return ++calls == 1 ? in[0] * 2.0 : in[0].sum(); }, {x});
  REQUIRE_ERROR(y.sum().backward(), "checkpoint: fn gave () float64 when run again in backward");
  REQUIRE_ERROR(checkpoint(CheckpointFn(), {x}), "checkpoint: fn is empty");
}

TEST_CASE("checkpoint: fn that writes into an input in place is refused, naming the input") {
  // issue 40: a.mul_(2) inside fn gave 4x the gradient (the recomputation doubled it again)
  Tensor w = tensor(std::vector<double>{1, 2, 3}).requires_grad_();
  Tensor a = w * 1.0, b = w * 1.0;  // non-leaves: an in-place write to them is allowed
  auto doubles_second = [](const std::vector<Tensor>& in) {
    Tensor t = in[1];
    t.mul_(2.0);
    return (in[0] * t).sum();
  };
  REQUIRE_ERROR(checkpoint(doubles_second, {a, b}),
                "tg::checkpoint: input 1 (3) float64 was written in place by fn (its version "
                "went from 0 to 1; last writer mul_)");
  // A write only when run again in backward: refused there.
  int calls = 0;
  Tensor c = w * 1.0;
  Tensor y = checkpoint(
      [&](const std::vector<Tensor>& in) {
        Tensor t = in[0];
        if (++calls == 2) t.mul_(2.0);
        return (t * t).sum();
      },
      {c});
  REQUIRE_ERROR(y.backward(),
                "tg::checkpoint: input 0 (3) float64 was written in place by fn "
                "when run again in backward");
  // Writing into a copy inside fn is fine: the gradient of sum((2w)^2) is 8w.
  w.reset_grad();
  Tensor d = w * 1.0;
  checkpoint(
      [](const std::vector<Tensor>& in) {
        Tensor t = in[0].clone();
        t.mul_(2.0);
        return (t * t).sum();
      },
      {d})
      .backward();
  tgt::require_close(w.grad(), {8, 16, 24}, 0, 0, "8w");
}
