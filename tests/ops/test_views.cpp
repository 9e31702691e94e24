// tests/ops/test_views.cpp — strided views (ops/shape/views.cpp): each view op shares storage
// (data_ptr arithmetic), has PyTorch's strides and offset, and passes gradients (float64
// gradcheck); contiguous() round trips; view/reshape on strided inputs; matmul takes transposed
// views as BLAS flags (no copy on the tape); and every op family gives the same values and
// gradients on a non-contiguous input as on its contiguous copy.
#include "helpers.hpp"

#include "autograd/io.hpp"
#include "nn/attention.hpp"
#include "nn/checkpoint.hpp"

#include <filesystem>

using namespace tg;

namespace {
// Bytes between two tensors' first elements, in elements of t's dtype.
int64_t elem_offset(const Tensor& view, const Tensor& base) {
  return (static_cast<const char*>(view.data_ptr()) - static_cast<const char*>(base.data_ptr())) /
         static_cast<int64_t>(dtype_size(base.dtype()));
}
Tensor iota(const Shape& s, DType dt = kFloat64) {
  return arange(0, static_cast<double>(shape_numel(s)), 1, dt).reshape(s);
}
std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }

// The op names on the live tape (inspection).
std::vector<std::string> tape_ops() {
  std::vector<std::string> ops;
  for (const auto& n : Tape::live_nodes()) ops.push_back(n->op);
  return ops;
}
int64_t count_op(const std::string& op) {
  int64_t n = 0;
  for (const std::string& o : tape_ops()) n += o == op;
  return n;
}
}  // namespace

TEST_CASE("views: transpose, permute and t share storage with swapped strides", "[views]") {
  Tensor x = iota({2, 3, 4});
  Tensor y = x.transpose(0, 2);
  CHECK(y.shape() == Shape{4, 3, 2});
  CHECK(y.strides() == Shape{1, 4, 12});
  CHECK(y.data_ptr() == x.data_ptr());
  CHECK_FALSE(y.is_contiguous());
  CHECK(y.impl()->storage == x.impl()->storage);
  // y[i][j][k] = x[k][j][i]
  Tensor yc = y.contiguous();
  CHECK(yc.is_contiguous());
  CHECK(yc.data_ptr() != x.data_ptr());
  const std::vector<double> v = values(yc);
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 2; ++k) CHECK(v[(i * 3 + j) * 2 + k] == k * 12 + j * 4 + i);
  Tensor p = x.permute({1, 2, 0});
  CHECK(p.strides() == Shape{4, 1, 12});
  CHECK(p.data_ptr() == x.data_ptr());
  Tensor m = iota({3, 5});
  CHECK(m.t().strides() == Shape{1, 5});
  CHECK(m.t().data_ptr() == m.data_ptr());
  CHECK(iota({4}).t().strides() == Shape{1});
  REQUIRE_THROWS_WITH(t(x), Catch::Contains("t: input (2,3,4) has 3 dims"));
  // contiguous() of a contiguous tensor is the tensor itself
  CHECK(x.contiguous().same(x));
  // a round trip gives the original values
  CHECK(values(x.transpose(0, 2).contiguous().transpose(0, 2).contiguous()) == values(x));
}

TEST_CASE("views: narrow, slice, select and operator[] move the offset", "[views]") {
  Tensor x = iota({4, 6});
  Tensor n = x.narrow(1, 2, 3);
  CHECK(n.shape() == Shape{4, 3});
  CHECK(n.strides() == Shape{6, 1});
  CHECK(n.storage_offset() == 2);
  CHECK(elem_offset(n, x) == 2);
  CHECK(values(n) == std::vector<double>{2, 3, 4, 8, 9, 10, 14, 15, 16, 20, 21, 22});
  Tensor rows = x.narrow(0, 1, 2);  // rows of a row-major matrix: still contiguous
  CHECK(rows.is_contiguous());
  CHECK(elem_offset(rows, x) == 6);
  Tensor s = slice(x, 1, 1, 6, 2);  // columns 1, 3, 5
  CHECK(s.strides() == Shape{6, 2});
  CHECK(elem_offset(s, x) == 1);
  CHECK(values(s.select(0, 1)) == std::vector<double>{7, 9, 11});
  Tensor r = x[2];
  CHECK(r.shape() == Shape{6});
  CHECK(r.is_contiguous());
  CHECK(elem_offset(r, x) == 12);
  Tensor c = x.select(1, -1);  // the last column
  CHECK(c.shape() == Shape{4});
  CHECK(c.strides() == Shape{6});
  CHECK(elem_offset(c, x) == 5);
  CHECK(values(c) == std::vector<double>{5, 11, 17, 23});
  // views of views compose
  Tensor vv = x.t().narrow(0, 1, 2).select(1, 3);  // x[3, 1:3]
  CHECK(values(vv) == std::vector<double>{19, 20});
  CHECK(elem_offset(vv, x) == 19);
  REQUIRE_THROWS_WITH(x.select(0, 4),
                      Catch::Contains("select: index 4 is out of range for dim 0 of size 4"));
  REQUIRE_THROWS_WITH(x.select(2, 0), Catch::Contains("select: dim 2 out of range"));
  REQUIRE_THROWS_WITH(scalar_tensor(1.0).select(0, 0), Catch::Contains("0-dim"));
}

TEST_CASE("views: expand has stride 0, squeeze and unsqueeze keep strides", "[views]") {
  Tensor x = iota({3, 1});
  Tensor e = x.expand({2, 3, 4});
  CHECK(e.strides() == Shape{0, 1, 0});
  CHECK(e.data_ptr() == x.data_ptr());
  CHECK(values(e.contiguous())[5] == 1);  // e[0][1][1] = x[1][0]
  Tensor t = iota({2, 3}).t();            // (3, 2) strides (1, 3)
  Tensor u = t.unsqueeze(1);
  CHECK(u.shape() == Shape{3, 1, 2});
  CHECK(u.strides()[0] == 1);
  CHECK(u.strides()[2] == 3);
  CHECK(u.data_ptr() == t.data_ptr());
  Tensor sq = u.squeeze(1);
  CHECK(sq.strides() == Shape{1, 3});
  CHECK(values(sq.contiguous()) == values(t.contiguous()));
}

TEST_CASE("views: view and reshape of strided tensors follow PyTorch", "[views]") {
  Tensor x = iota({4, 6});
  // columns 0..3 of each row: rows stay separate, so (4, 2, 2) is a view, (16) is not
  Tensor n = x.narrow(1, 0, 4);
  Tensor v = n.view({4, 2, 2});
  CHECK(v.data_ptr() == x.data_ptr());
  CHECK(v.strides() == Shape{6, 2, 1});
  REQUIRE_THROWS_WITH(n.view({16}), Catch::Contains("view: shape (16) is not compatible with "
                                                    "input (4,4) of strides (6,1)"));
  Tensor r = n.reshape({16});  // a copy instead
  CHECK(r.is_contiguous());
  CHECK(r.data_ptr() != x.data_ptr());
  CHECK(values(r) == values(n));
  // a transposed matrix flattens only by copying; splitting its dims is a view
  Tensor t = iota({3, 4}).t();  // (4, 3)
  Tensor tv = t.view({2, 2, 3});
  CHECK(tv.strides() == Shape{2, 1, 4});
  CHECK(values(tv.contiguous()) == values(t.contiguous()));
  CHECK(values(t.reshape({12})) == values(t.contiguous()));
  // flatten of a contiguous block is free
  CHECK(flatten(iota({2, 3, 4}), 1).is_contiguous());
}

TEST_CASE("views: O(1) — a chain of views allocates nothing", "[views]") {
  Tensor big = zeros({256, 256, 16}, kFloat32);
  const auto* storage = big.impl()->storage.get();
  Tensor v = big;
  for (int i = 0; i < 100; ++i)
    v = v.transpose(0, 1).narrow(2, 0, 16).select(0, 3).unsqueeze(0).expand({256, 256, 16});
  CHECK(v.impl()->storage.get() == storage);
  CHECK(v.shape() == Shape{256, 256, 16});
  CHECK(v.strides() == Shape{0, 0, 1});  // from the second round on, row 3 of an expand
}

TEST_CASE("views: gradients flow through every view op (float64 gradcheck)", "[views][grad]") {
  manual_seed(7);
  Tensor x = tgt::leaf({3, 4, 5});
  auto check = [&](const std::string& what, std::function<Tensor(const Tensor&)> f) {
    tgt::check_grad(
        [&](const std::vector<Tensor>& in) {
          Tensor y = f(in[0]);
          return (y * y).sum();  // non-linear, so each element's gradient differs
        },
        {x}, what);
  };
  check("transpose", [](const Tensor& a) { return a.transpose(0, 2); });
  check("permute", [](const Tensor& a) { return a.permute({2, 0, 1}); });
  check("narrow", [](const Tensor& a) { return a.narrow(1, 1, 2); });
  check("slice step", [](const Tensor& a) { return slice(a, 2, 0, 5, 2); });
  check("select", [](const Tensor& a) { return a.select(1, 2); });
  check("operator[]", [](const Tensor& a) { return a[1]; });
  check("expand", [](const Tensor& a) { return a.narrow(1, 0, 1).expand({3, 6, 5}); });
  check("unsqueeze of transposed", [](const Tensor& a) { return a.transpose(0, 1).unsqueeze(1); });
  check("view of narrowed", [](const Tensor& a) { return a.narrow(2, 0, 4).view({3, 4, 2, 2}); });
  check("reshape of transposed (copy)",
        [](const Tensor& a) { return a.transpose(1, 2).reshape({-1}); });
  check("chain",
        [](const Tensor& a) { return a.transpose(0, 2).narrow(0, 1, 3).select(2, 1).t(); });
  check("contiguous", [](const Tensor& a) { return a.transpose(0, 1).contiguous() * 2.0; });
  check("views summed twice",
        [](const Tensor& a) { return a.transpose(0, 2).select(0, 1) + a.select(2, 1).t() * 3.0; });
}

TEST_CASE("views: matmul reads transposed views as BLAS flags, no copy", "[views][matmul]") {
  manual_seed(3);
  Tensor a = tgt::leaf({4, 3}), b = tgt::leaf({4, 5});
  const int64_t before = count_op("contiguous");
  Tensor y = matmul(a.t(), b);  // (3, 5)
  // batched: q·kᵀ as attention writes it
  Tensor q = tgt::leaf({2, 3, 6, 4}), k = tgt::leaf({2, 3, 7, 4});
  Tensor s = matmul(q, k.transpose(-2, -1));
  CHECK(count_op("contiguous") == before);  // no copy recorded for either product
  Tensor want = matmul(a.t().contiguous(), b);
  CHECK(count_op("contiguous") == before + 1);
  tgt::require_close(y, values(want), 1e-12, 1e-12, "aT b");
  tgt::require_close(s, values(matmul(q, k.transpose(-2, -1).contiguous())), 1e-12, 1e-12, "q kT");
  // lhs transposed with batch dims against one rhs matrix (no row folding)
  Tensor l = tgt::leaf({2, 5, 3}), r = tgt::leaf({5, 4});
  tgt::require_close(matmul(l.transpose(1, 2), r),
                     values(matmul(l.transpose(1, 2).contiguous(), r)), 1e-12, 1e-12, "lhsT");
  tgt::check_grad([](const std::vector<Tensor>& in) { return matmul(in[0].t(), in[1].t()); },
                  {tgt::leaf({4, 3}), tgt::leaf({5, 4})}, "matmul aT bT");
  tgt::check_grad(
      [](const std::vector<Tensor>& in) { return matmul(in[0], in[1].transpose(-2, -1)); },
      {tgt::leaf({2, 3, 4}), tgt::leaf({2, 5, 4})}, "bmm bT");
  tgt::check_grad(
      [](const std::vector<Tensor>& in) { return matmul(in[0].transpose(1, 2), in[1]); },
      {tgt::leaf({2, 4, 3}), tgt::leaf({4, 2})}, "lhsT batched, rhs one matrix");
  tgt::check_grad(
      [](const std::vector<Tensor>& in) {
        return matmul(in[0].permute({2, 0, 1}), in[1]);
      },
      {tgt::leaf({3, 4, 2}), tgt::leaf({2, 4, 5})}, "other strides: made contiguous");
}

// Each op family on a non-contiguous input equals the op on its contiguous copy, values and
// gradients; gradcheck through the strided input.
TEST_CASE("views: every op family accepts non-contiguous inputs", "[views][grad]") {
  manual_seed(11);
  using Fn = std::function<Tensor(const Tensor&)>;
  struct Case {
    std::string name;
    Shape shape;  // of the base; the op gets base.transpose(0, 1) (or t() for 2-D)
    Fn fn;
  };
  const std::vector<Case> cases = {
      {"add", {4, 3}, [](const Tensor& x) { return x + x.contiguous() * 2.0; }},
      {"mul broadcast", {4, 3}, [](const Tensor& x) { return x * x.narrow(0, 0, 1); }},
      {"exp", {4, 3}, [](const Tensor& x) { return exp(x); }},
      {"tanh", {4, 3}, [](const Tensor& x) { return tanh(x); }},
      {"pow", {4, 3}, [](const Tensor& x) { return pow(abs(x) + 1.0, 1.5); }},
      {"sum dim", {4, 3, 2}, [](const Tensor& x) { return x.sum({1}); }},
      {"mean",
       {4, 3, 2},
       [](const Tensor& x) {
         return x.mean({0, 2});
       }},
      {"max", {4, 3}, [](const Tensor& x) { return x.max({1}); }},
      {"var", {4, 3}, [](const Tensor& x) { return x.var({1}); }},
      {"softmax", {4, 3}, [](const Tensor& x) { return softmax(x, -1); }},
      {"log_softmax", {4, 3}, [](const Tensor& x) { return log_softmax(x, 0); }},
      {"layer_norm",
       {5, 4},
       [](const Tensor& x) { return layer_norm(x, {5}, Tensor(), Tensor(), 1e-5); }},
      {"matmul", {4, 3}, [](const Tensor& x) { return matmul(x, x.t()); }},
      {"linear", {4, 3}, [](const Tensor& x) { return linear(x, x.narrow(0, 0, 2).contiguous()); }},
      {"masked_fill",
       {4, 3},
       [](const Tensor& x) { return masked_fill(x, gt(x.detach(), zeros({}, kFloat64)), 0.5); }},
      {"where",
       {4, 3},
       [](const Tensor& x) { return where(gt(x.detach(), zeros({}, kFloat64)), x, x * 3.0); }},
      {"cat",
       {4, 3},
       [](const Tensor& x) {
         return cat({x, x.narrow(0, 1, 2)}, 0);
       }},
      {"index_select",
       {4, 3},
       [](const Tensor& x) {
         return index_select(x, 1, tensor(std::vector<int64_t>{3, 0, 3}));
       }},
      {"gather",
       {4, 3},
       [](const Tensor& x) {
         return gather(x, 1, tensor(std::vector<int64_t>{0, 3, 1, 2, 2, 0}, {3, 2}));
       }},
      {"cumsum", {4, 3}, [](const Tensor& x) { return cumsum(x, 1); }},
      {"sort", {4, 3}, [](const Tensor& x) { return sort(x, 1).values; }},
      {"topk", {4, 3}, [](const Tensor& x) { return topk(x, 2, 1).values; }},
      {"tril", {4, 3}, [](const Tensor& x) { return tril(x); }},
      {"cross_entropy",
       {4, 3},
       [](const Tensor& x) {
         return cross_entropy(x, tensor(std::vector<int64_t>{1, 0, 3}));
       }},
      {"clone", {4, 3}, [](const Tensor& x) { return x.clone(); }},
      {"to(device) and to(dtype)", {4, 3}, [](const Tensor& x) { return x.to(kCPU) * 1.0; }},
      {"embedding",
       {4, 3},
       [](const Tensor& x) {
         return embedding(tensor(std::vector<int64_t>{0, 2, 1, 2}), x);
       }},
      {"rearrange", {4, 3, 2}, [](const Tensor& x) { return rearrange(x, "a b c -> c (a b)"); }},
  };
  for (const Case& c : cases) {
    Tensor base = tgt::leaf(c.shape);
    Tensor strided = base.transpose(0, 1);
    REQUIRE_FALSE(strided.is_contiguous());
    Tensor copy = strided.detach().contiguous().requires_grad_();
    Tensor ys = c.fn(strided), yc = c.fn(copy);
    INFO(c.name);
    tgt::require_close(ys, values(yc), 1e-12, 1e-12, c.name + " values");
    Tensor g = randn(ys.shape(), kFloat64);
    ys.backward(g);
    yc.backward(g);
    REQUIRE(base.grad().defined());
    tgt::require_close(base.grad().transpose(0, 1), values(copy.grad()), 1e-12, 1e-12,
                       c.name + " gradient");
    if (c.name == "sort" || c.name == "topk" || c.name == "max") continue;  // kinks: above
    tgt::check_grad([&](const std::vector<Tensor>& in) { return c.fn(in[0].transpose(0, 1)); },
                    {tgt::leaf(c.shape)}, c.name + " gradcheck");
  }
}

TEST_CASE("views: save_npy and save_safetensors write a view's elements in order", "[views]") {
  const auto dir = std::filesystem::temp_directory_path() / "tg_test_views";
  std::filesystem::create_directories(dir);
  Tensor x = iota({3, 4});
  Tensor v = x.t().narrow(0, 1, 2);  // (2, 3), strided
  save_npy((dir / "v.npy").string(), v);
  CHECK(values(load_npy((dir / "v.npy").string())) == values(v.contiguous()));
  nn::StateDict d;
  d.insert("v", v);
  nn::save_safetensors((dir / "v.safetensors").string(), d, {});
  const Tensor back = nn::load_safetensors((dir / "v.safetensors").string()).tensors.at("v");
  CHECK(back.shape() == Shape{2, 3});
  CHECK(values(back) == std::vector<double>{1, 5, 9, 2, 6, 10});
  std::filesystem::remove_all(dir);
}

TEST_CASE("views: dropout of a strided input draws the same mask", "[views]") {
  Tensor base = randn({4, 6}, kFloat64);
  manual_seed(9);
  Tensor a = dropout(base.t(), 0.5, true);
  manual_seed(9);
  Tensor b = dropout(base.t().contiguous(), 0.5, true);
  CHECK(values(a) == values(b));
}

TEST_CASE("views: attention and MHA read strided q, k, v", "[views][attention]") {
  manual_seed(5);
  // (B, T, NH, hs) projections viewed as (B, NH, T, hs): the classic head split
  Tensor q = tgt::leaf({2, 5, 3, 4}), k = tgt::leaf({2, 6, 3, 4}), v = tgt::leaf({2, 6, 3, 4});
  auto heads = [](const Tensor& t) { return t.transpose(1, 2); };
  AttentionResult a = scaled_dot_product_attention(heads(q), heads(k), heads(v));
  AttentionResult b = scaled_dot_product_attention(heads(q).contiguous(), heads(k).contiguous(),
                                                   heads(v).contiguous());
  tgt::require_close(a.output, values(b.output), 1e-12, 1e-12, "sdpa strided");
  tgt::check_grad(
      [&](const std::vector<Tensor>& in) {
        return scaled_dot_product_attention(heads(in[0]), heads(in[1]), heads(in[2]),
                                            AttentionMask::causal())
            .output;
      },
      {tgt::leaf({1, 4, 2, 3}), tgt::leaf({1, 4, 2, 3}), tgt::leaf({1, 4, 2, 3})},
      "sdpa causal through head-split views");
  // MHA with a sequence-first input made by transposing a batch-first tensor
  nn::MultiheadAttention mha(8, 2);
  mha.to(kFloat64);
  Tensor xb = tgt::leaf({3, 5, 8});  // (B, T, E)
  Tensor xs = xb.transpose(0, 1);    // (T, B, E), strided
  Tensor y1 = mha.forward(xs, xs, xs).first;
  Tensor y2 = mha.forward(xs.contiguous(), xs.contiguous(), xs.contiguous()).first;
  tgt::require_close(y1, values(y2), 1e-12, 1e-12, "mha strided input");
}
