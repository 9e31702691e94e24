// tests/autograd/test_post_hooks.cpp — post-accumulate-grad hooks (once per backward, after every
// use of the leaf is summed) and queue_backward_callback (after the walk; told when it threw):
// the engine pieces data-parallel training (nn/dist) stands on.
#include "helpers.hpp"

using namespace tg;

TEST_CASE("post-accumulate hook fires once per backward with the complete gradient") {
  Tensor w = tensor(std::vector<double>{1, 2}).requires_grad_();
  Tensor b = tensor(std::vector<double>{0.5}).requires_grad_();
  std::vector<std::vector<double>> seen;
  std::vector<std::string> order;
  w.register_post_accumulate_grad_hook([&](const Tensor& t) {
    seen.push_back(t.grad().to_vector<double>());
    order.push_back("w");
  });
  b.register_post_accumulate_grad_hook([&](const Tensor&) { order.push_back("b"); });
  // w used three times (tied): the hook sees the sum 2w + 3 + w·... only once.
  Tensor y = (w * w).sum() + (w * 3.0).sum() + (w * b).sum();
  y.backward();
  REQUIRE(seen.size() == 1);
  // d/dw = 2w + 3 + b = (5.5, 7.5)
  REQUIRE(seen[0] == std::vector<double>{5.5, 7.5});
  REQUIRE(order.size() == 2);
  // A second backward accumulates and fires again, showing the accumulated value.
  (w * 2.0).sum().backward();
  REQUIRE(seen.size() == 2);
  REQUIRE(seen[1] == std::vector<double>{7.5, 9.5});
}

TEST_CASE(
    "post-accumulate hook: not fired for a leaf the backward does not reach, nor by tg::grad") {
  Tensor a = tensor(std::vector<double>{1}).requires_grad_();
  Tensor u = tensor(std::vector<double>{1}).requires_grad_();
  int fired_a = 0, fired_u = 0;
  a.register_post_accumulate_grad_hook([&](const Tensor&) { ++fired_a; });
  u.register_post_accumulate_grad_hook([&](const Tensor&) { ++fired_u; });
  (a * 2.0).sum().backward();
  REQUIRE(fired_a == 1);
  REQUIRE(fired_u == 0);
  Tensor out = (a * u).sum();
  tg::grad({out}, {a, u});
  REQUIRE(fired_a == 1);
  REQUIRE(fired_u == 0);
  // A root that is itself the leaf.
  a.backward(ones({1}, kFloat64));
  REQUIRE(fired_a == 2);
}

TEST_CASE("post-accumulate hook: refused on a non-leaf or a tensor without grad") {
  Tensor a = ones({2}, kFloat64).requires_grad_();
  Tensor h = a * 2.0;
  REQUIRE_ERROR(h.register_post_accumulate_grad_hook([](const Tensor&) {}), "not a leaf");
  Tensor c = ones({2});
  REQUIRE_ERROR(c.register_post_accumulate_grad_hook([](const Tensor&) {}), "not a leaf");
}

TEST_CASE(
    "queue_backward_callback runs after the walk, in order, and is told when the walk threw") {
  REQUIRE_ERROR(queue_backward_callback([](bool) {}), "no backward is running");
  Tensor w = tensor(std::vector<double>{1, 2}).requires_grad_();
  std::vector<std::string> log;
  bool queued = false;
  w.register_post_accumulate_grad_hook([&](const Tensor& t) {
    log.push_back("hook");
    if (!queued) {
      queued = true;
      queue_backward_callback([&](bool ok) { log.push_back(ok ? "cb1 ok" : "cb1 failed"); });
      queue_backward_callback([&](bool ok) { log.push_back(ok ? "cb2 ok" : "cb2 failed"); });
    }
  });
  (w * w).sum().backward();
  REQUIRE(log == std::vector<std::string>{"hook", "cb1 ok", "cb2 ok"});

  // A walk that throws after the hook queued its callback: the callback hears false.
  log.clear();
  queued = false;
  Tensor x = tensor(std::vector<double>{3}).requires_grad_();
  x.register_hook([](const Tensor& g) -> Tensor { throw Error("boom in a hook"); });
  // x's ops are recorded first (one statement each: the operands of + have no evaluation order),
  // so the reverse walk completes w (its hook queues the callbacks) before x's gradient arrives
  // and x's hook throws: the callbacks then hear the failure.
  Tensor xs = x.sum() * 0.0;
  Tensor ww = (w * w).sum();
  Tensor y = xs + ww;
  REQUIRE_ERROR(y.backward(), "boom in a hook");
  REQUIRE(log == std::vector<std::string>{"hook", "cb1 failed", "cb2 failed"});
  // The next backward starts clean.
  log.clear();
  queued = false;
  (w * 1.0).sum().backward();
  REQUIRE(log == std::vector<std::string>{"hook", "cb1 ok", "cb2 ok"});
}
