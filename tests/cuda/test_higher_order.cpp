// tests/cuda/test_higher_order.cpp — create_graph on the GPU: Hessian-vector products through the
// fused attention (every layout the fused kernels take, masks with padding, position biases), a
// LayerNorm + GELU + cross-entropy MLP, softmax, embedding and the scans, in float64, against the
// same products on the CPU (which gradgradcheck checks numerically), and activation
// checkpointing on the device.
#include "tests/cuda/parity_harness.hpp"

#include "autograd/activation_checkpoint.hpp"

using namespace tg;

namespace {
using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

// H·v of fn at xs (CPU float64 tensors) on `dev`, returned there.
std::vector<Tensor> hvp_on(const Fn& fn, const std::vector<Tensor>& xs,
                           const std::vector<Tensor>& v, Device dev) {
  std::vector<Tensor> in;
  for (const Tensor& x : xs) in.push_back(x.to(dev).detach().requires_grad_());
  GradOptions cg;
  cg.create_graph = true;
  const std::vector<Tensor> g = grad({fn(in)}, in, {}, cg);
  Tensor gv = sum(g[0] * v[0].to(dev));
  for (size_t i = 1; i < g.size(); ++i) gv = gv + sum(g[i] * v[i].to(dev));
  return grad({gv}, in);
}

void check_hvp(const std::string& name, const Fn& fn, const std::vector<Tensor>& xs) {
  std::vector<Tensor> v;
  for (const Tensor& x : xs) v.push_back(randn(x.shape(), kFloat64));
  const std::vector<Tensor> want = hvp_on(fn, xs, v, kCPU), got = hvp_on(fn, xs, v, tgt::gpu());
  for (size_t i = 0; i < want.size(); ++i)
    tgt::check_close(fmt::format("{}: H·v for input {}", name, i), got[i], want[i], 1e-9);
}
}  // namespace

TEST_CASE("cuda create_graph: Hessian-vector products match the CPU") {
  manual_seed(31);
  const Shape s{2, 2, 9, 8};
  const auto pad = [] { return AttentionMask::key_lengths(tensor(std::vector<int64_t>{9, 5})); };
  check_hvp("sdpa causal (fused)",
            [](auto& in) {
              return sum(pow(
                  scaled_dot_product_attention(in[0], in[1], in[2], AttentionMask::causal()).output,
                  2.0));
            },
            {randn(s, kFloat64), randn(s, kFloat64), randn(s, kFloat64)});
  check_hvp("sdpa local & padding (fused)",
            [&](auto& in) {
              return sum(pow(scaled_dot_product_attention(in[0], in[1], in[2],
                                                          AttentionMask::local(3, 0) & pad())
                                 .output,
                             2.0));
            },
            {randn(s, kFloat64), randn(s, kFloat64), randn(s, kFloat64)});
  check_hvp("sdpa with a relative bias and ALiBi (the fused node's inputs include both)",
            [](auto& in) {
              const AttentionMask m = AttentionMask::causal() &
                                      AttentionMask::relative_bias(in[3], false, 16) &
                                      AttentionMask::alibi(in[4]);
              return sum(pow(scaled_dot_product_attention(in[0], in[1], in[2], m).output, 2.0));
            },
            {randn(s, kFloat64), randn(s, kFloat64), randn(s, kFloat64), randn({2, 8}, kFloat64),
             tensor(std::vector<double>{0.5, 0.25}, {2})});
  check_hvp("sdpa packed qkv",
            [](auto& in) {
              return sum(pow(
                  scaled_dot_product_attention_packed(in[0], AttentionMask::causal()).output, 2.0));
            },
            {randn({2, 7, 3, 2, 8}, kFloat64)});
  const Tensor target = tensor(std::vector<int64_t>{1, 0, 2, 2, 1});
  check_hvp("layer_norm + gelu + cross_entropy",
            [&](auto& in) {
              const Tensor h = gelu(layer_norm(linear(in[0], in[1]), {6}));
              return cross_entropy(linear(h, in[2]), target.to(in[0].device()));
            },
            {randn({5, 4}, kFloat64), randn({6, 4}, kFloat64), randn({3, 6}, kFloat64)});
  check_hvp("softmax, embedding, cumprod, logcumsumexp",
            [](auto& in) {
              const Tensor ids = tensor(std::vector<int64_t>{0, 3, 1, 3}).to(in[0].device());
              const Tensor e = embedding(ids, in[0]);
              return sum(softmax(e, 1) * cumprod(e, 1)) + sum(logcumsumexp(e, 0));
            },
            {randn({4, 3}, kFloat64)});
}

TEST_CASE("cuda activation checkpointing: the same gradients as without") {
  manual_seed(32);
  const Tensor w0 = randn({6, 6}, kFloat64), x0 = randn({4, 6}, kFloat64);
  auto grads = [&](bool ckpt) {
    Tensor w = w0.to(tgt::gpu()).detach().requires_grad_();
    Tensor x = x0.to(tgt::gpu()).detach().requires_grad_();
    auto body = [&](const std::vector<Tensor>& in) { return tanh(matmul(in[0], w)); };
    Tensor y = ckpt ? checkpoint(body, {x}) : body({x});
    sum(y * y).backward();
    return std::vector<Tensor>{x.grad(), w.grad()};
  };
  const auto a = grads(false), b = grads(true);
  for (size_t i = 0; i < a.size(); ++i) tgt::check_close("checkpoint grad", b[i], a[i].cpu(), 0.0);
}
