// tests/autograd/test_saved.cpp — the Saved handle (RecordInfo::save / save_output, Saved::get):
// two same-shape inputs that swap places keep a right second derivative (closed form and
// gradgradcheck, a user op and the library's div and pow), every saved tensor is version-checked
// (the 7th and 8th of one node too), saved bytes come from the handles, and a handle whose slot
// does not match the op's output is refused at record time, and x.div_(x) leaves no cycle.
#include "helpers.hpp"

#include "ops/functional/functional.hpp"

using namespace tg;

namespace {
GradOptions cg() {
  GradOptions o;
  o.create_graph = true;
  return o;
}

// y = a² · b elementwise, a user op whose backward reads both inputs through handles.
Tensor sq_times(const Tensor& a, const Tensor& b) {
  Tensor y;
  {
    NoGradGuard no_grad;
    y = a.detach() * a.detach() * b.detach();
  }
  RecordInfo info;
  Saved sa = info.save(a), sb = info.save(b);
  record("sq_times", y, {a, b}, info.differentiable(),
         [sa, sb](const Tensor& g) -> std::vector<Tensor> {
           const Tensor a = sa.get(), b = sb.get();
           return {g * a * b * 2.0, g * a * a};
         });
  return y;
}
}  // namespace

TEST_CASE("Saved: two same-shape inputs that swap places keep the right second derivative") {
  Tensor p = tensor(std::vector<double>{0.5, -1.5, 2}).requires_grad_();
  Tensor q = tensor(std::vector<double>{1.25, 3, -0.75}).requires_grad_();
  const Tensor w = tensor(std::vector<double>{1, -2, 0.5});
  // L = Σ q²·p (q in a's place): dL/dq = 2qp, dL/dp = q²
  const std::vector<Tensor> g = grad({sq_times(q, p).sum()}, {q, p}, {}, cg());
  tgt::require_close(g[0], std::vector<double>{1.25, -9, -3});
  tgt::require_close(g[1], std::vector<double>{1.5625, 9, 0.5625});
  // d/d(q, p) of Σ w·dL/dq = (2pw, 2qw); of Σ w·dL/dp = (2qw, 0)
  const std::vector<Tensor> hq = grad({(g[0] * w).sum()}, {q, p});
  tgt::require_close(hq[0], std::vector<double>{1, 6, 2});
  tgt::require_close(hq[1], std::vector<double>{2.5, -12, -0.75});
  const std::vector<Tensor> hp = grad({(g[1] * w).sum()}, {q, p});
  tgt::require_close(hp[0], std::vector<double>{2.5, -12, -0.75});
  REQUIRE_FALSE(hp[1].defined());
}

TEST_CASE("Saved: gradgradcheck with swapped same-shape inputs (user op, div, pow)") {
  manual_seed(41);
  Tensor a = tgt::leaf({2, 3}), b = tgt::leaf({2, 3});
  REQUIRE(gradgradcheck([](auto& in) { return sq_times(in[1], in[0]); }, {a, b}).passed);
  REQUIRE(gradgradcheck([](auto& in) { return sq_times(in[0], in[1]); }, {a, b}).passed);
  Tensor pos = add(abs(tgt::leaf({2, 3})), 0.5).detach().requires_grad_();
  REQUIRE(gradgradcheck([](auto& in) { return div(in[1], in[0]); }, {pos, b}).passed);
  REQUIRE(gradgradcheck([](auto& in) { return pow(in[1], in[0]); }, {a, pos}).passed);
}

namespace {
// y = x · (c[0] + ... + c[7]): a node that saves eight tensors besides nothing else.
Tensor eight_saved(const Tensor& x, const std::vector<Tensor>& c) {
  Tensor total = zeros(x.shape(), x.dtype());
  for (const Tensor& t : c) total = total + t;
  Tensor y = x.detach() * total;
  RecordInfo info;
  std::vector<Saved> saved;
  for (const Tensor& t : c) saved.push_back(info.save(t));
  record("eight_saved", y, {x}, info, [saved](const Tensor& g) -> std::vector<Tensor> {
    Tensor s = zeros(g.shape(), g.dtype());
    for (const Saved& h : saved) s = s + h.get();
    return {g * s};
  });
  return y;
}
}  // namespace

TEST_CASE("Saved: an in-place write to the 7th or 8th saved tensor of one node is refused") {
  for (size_t k : {size_t(6), size_t(7)}) {
    CAPTURE(k);
    Tensor x = tensor(std::vector<double>{1, 2}).requires_grad_();
    std::vector<Tensor> c;
    for (int i = 0; i < 8; ++i) c.push_back(full({2}, 0.5 * i, kFloat64));
    Tensor y = eight_saved(x, c).sum();
    REQUIRE(y.grad_fn()->next[0].node->saved.size() == 8);
    add_(c[k], full({2}, 1.0, kFloat64));
    REQUIRE_ERROR(y.backward(), "backward of eight_saved");
    REQUIRE_NOTHROW(eight_saved(x, c).sum().backward());  // a fresh node: fine
  }
}

TEST_CASE("Saved: an untouched node with eight saved tensors runs, and reports their bytes") {
  Tensor x = tensor(std::vector<double>{1, 2}).requires_grad_();
  std::vector<Tensor> c;
  for (int i = 0; i < 8; ++i) c.push_back(full({2}, 1.0, kFloat64));
  Tensor y = eight_saved(x, c);
  REQUIRE(y.grad_fn()->saved_bytes == 8 * 2 * 8);
  y.sum().backward();
  tgt::require_close(x.grad(), std::vector<double>{8, 8});
}

TEST_CASE("Saved: the slot is checked by identity at record time") {
  Tensor x = tensor(std::vector<double>{1, 2}).requires_grad_();
  Tensor y = Tensor::empty({2}, kFloat64);
  Tensor other = Tensor::empty({2}, kFloat64);
  auto noop = [](const Tensor& g) -> std::vector<Tensor> { return {g}; };
  {
    RecordInfo info;
    info.save_output(other);
    REQUIRE_ERROR(record("bad_output", y, {x}, info, noop),
                  "bad_output: a tensor saved with save_output (0) is not the op's output (2)");
  }
  {
    RecordInfo info;
    info.save(x);
    info.save(y);
    REQUIRE_ERROR(record("own_output", y, {x}, info, noop),
                  "own_output: a tensor saved with save (1) is the op's output (2): use "
                  "save_output");
  }
  RecordInfo info;
  Saved so = info.save_output(y);
  record("good", y, {x}, info, noop);
  REQUIRE(so.get().data_ptr() == y.data_ptr());
  REQUIRE_FALSE(so.get().requires_grad());  // detached outside a recorded backward
}

TEST_CASE("Saved: x.div_(x) on a non-leaf refuses backward and frees its nodes") {
  const int64_t before = Tape::live_count();
  {
    Tensor x = tensor(std::vector<double>{1, 2}).requires_grad_();
    Tensor a = x * 3.0;
    div_(a, a);  // div saved a itself, which now takes div's node as its history
    REQUIRE_ERROR(a.sum().backward(), "modified in place by div_");
  }
  REQUIRE(Tape::live_count() == before);  // no node holds itself through a saved tensor
}

TEST_CASE("Saved: under create_graph a saved output comes back with its node as history") {
  Tensor x = tensor(std::vector<double>{0.5, -1}).requires_grad_();
  Tensor y = div(ones({2}, kFloat64), x);        // 1/x: div saves its output
  Tensor g = grad({y.sum()}, {x}, {}, cg())[0];  // -1/x²
  tgt::require_close(g, std::vector<double>{-4, -1});
  tgt::require_close(grad({g.sum()}, {x})[0], std::vector<double>{16, -2});  // 2/x³
}
