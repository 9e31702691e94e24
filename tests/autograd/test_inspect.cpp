// tests/autograd/test_inspect.cpp — creation sites and tape inspection: sites name the test's own
// lines (also through methods and composed ops), the table / DOT / JSON of a small fixed graph
// match expected text, and gradient norms recorded in inspect mode match hand-computed ones.
#include "helpers.hpp"

#include "autograd/inspect.hpp"
#include "ops/attention/attention.hpp"

#include <cmath>

using namespace tg;

namespace {
std::string here(int line) { return "test_inspect.cpp:" + std::to_string(line); }
}  // namespace

TEST_CASE("inspect: sites name the calling line, through methods and composed ops") {
  Tensor x = tensor(std::vector<double>{1, -2, 3}).requires_grad_();
  const int line = __LINE__;
  Tensor a = tg::exp(x);       // line + 1: free function
  Tensor b = x.tanh();         // line + 2: Tensor method
  Tensor c = clamp_min(x, 0);  // line + 3: clamp_min calls clamp: the outer call wins
  Tensor d = a * b;            // operators cannot know their line
  REQUIRE(a.grad_fn()->site.str() == here(line + 1));
  REQUIRE(b.grad_fn()->site.str() == here(line + 2));
  REQUIRE(std::string(c.grad_fn()->op) == "clamp");
  REQUIRE(c.grad_fn()->site.str() == here(line + 3));
  REQUIRE(d.grad_fn()->site.str() == "?");
  REQUIRE(std::string(d.grad_fn()->site.known() ? "known" : "unknown") == "unknown");
  // The site is the full path the compiler saw; str() keeps the basename.
  REQUIRE(std::string(a.grad_fn()->site.file).find("tests/autograd/test_inspect.cpp") !=
          std::string::npos);
}

TEST_CASE("inspect: an operator inside an op inherits the op's site") {
  // additive_attention is composed of linear, +, tanh, matmul and softmax: every node it records
  // (the operator + included) names this line.
  manual_seed(1);
  Tensor q = randn({1, 2, 3}, kFloat64).requires_grad_(), k = randn({1, 4, 3}, kFloat64);
  Tensor Wq = randn({5, 3}, kFloat64), Wk = randn({5, 3}, kFloat64), v = randn({5}, kFloat64);
  const int line = __LINE__ + 1;
  auto [out, w] = additive_attention(q, k, k, Wq, Wk, v);
  Graph g = inspect(out);
  REQUIRE(g.nodes.size() >= 5);
  for (const GraphNode& n : g.nodes) {
    INFO(n.op);
    REQUIRE(n.site.str() == here(line));
  }
}

TEST_CASE("inspect: table, DOT and JSON of (x*w).sum() match the expected text") {
  InspectGuard on;
  Tensor x = tensor(std::vector<float>{1, 2, 3}).requires_grad_();
  Tensor w = tensor(std::vector<float>{4, 5, 6});  // needs no gradient
  const int line = __LINE__ + 1;
  Tensor y = mul(x, w);
  Tensor loss = y.sum();
  loss.backward();
  Graph g = inspect(loss);
  REQUIRE(g.nodes.size() == 2);
  REQUIRE(g.leaves.size() == 1);
  InspectOptions o;
  o.seq = false;  // tape positions depend on every test run before this one
  const std::string s0 = here(line), s1 = here(line + 1);

  REQUIRE(g.table(o) ==
          "   # op  inputs   output dtype         saved     |dout|  site\n"
          "   0 mul (3), (3) (3)    float32        24 B      1.732  " +
              s0 +
              "\n"
              "   1 sum (3)      ()     float32         0 B          1  " +
              s1 +
              "\n"
              "2 nodes, 1 leaves, 24 B saved for backward\n");

  REQUIRE(g.dot(o) ==
          "digraph tape {\n"
          "  rankdir=BT;\n"
          "  node [shape=box, fontname=\"Helvetica\", fontsize=10];\n"
          "  edge [fontname=\"Helvetica\", fontsize=9];\n"
          "  leaf0 [shape=ellipse, label=\"leaf 0\\n(3) float32\\n|grad| 8.775\"];\n"
          "  n0 [label=\"#0 mul\\n(3), (3) -> (3) float32\\nsaved 24 B\\n|dout| 1.732\\n" +
              s0 +
              "\"];\n"
              "  n1 [label=\"#1 sum\\n(3) -> () float32\\nsaved 0 B\\n|dout| 1\\n" +
              s1 +
              "\"];\n"
              "  leaf0 -> n0 [label=\"8.775\"];\n"
              "  n0 -> n1 [label=\"1.732\"];\n"
              "}\n");

  o.grads = false;  // keeps the JSON free of long decimals
  REQUIRE(g.json(o) == R"({
  "leaves": [
    {
      "dtype": "float32",
      "index": 0,
      "shape": [
        3
      ]
    }
  ],
  "nodes": [
    {
      "dtype": "float32",
      "flops": {
        "backward": 3.0,
        "forward": 3.0
      },
      "index": 0,
      "inputs": [
        {
          "index": 0,
          "kind": "leaf",
          "shape": [
            3
          ]
        },
        {
          "kind": "none",
          "shape": [
            3
          ]
        }
      ],
      "op": "mul",
      "output_shape": [
        3
      ],
      "saved_bytes": 24,
      "site": ")" + s0 + R"("
    },
    {
      "dtype": "float32",
      "flops": {
        "backward": 3.0,
        "forward": 3.0
      },
      "index": 1,
      "inputs": [
        {
          "index": 0,
          "kind": "node",
          "shape": [
            3
          ]
        }
      ],
      "op": "sum",
      "output_shape": [],
      "saved_bytes": 0,
      "site": ")" + s1 + R"("
    }
  ]
}
)");
  o.sites = false;
  REQUIRE(g.dot(o).find("test_inspect") == std::string::npos);
}

TEST_CASE("inspect: gradient norms after backward match hand-computed ones") {
  InspectGuard on;
  // loss = sum(tanh(a·x)) with a = 2: dout of tanh is ones; d/dx = a·(1 - tanh²(a·x)).
  Tensor x = tensor(std::vector<double>{0.5, -1.0}).requires_grad_();
  Tensor ax = mul(x, 2.0);
  Tensor t = tg::tanh(ax);
  Tensor loss = t.sum();
  loss.backward();
  Graph g = inspect(loss);
  REQUIRE(g.nodes.size() == 3);
  const double t0 = std::tanh(1.0), t1 = std::tanh(-2.0);
  const double dax0 = 1 - t0 * t0, dax1 = 1 - t1 * t1;      // gradient reaching ax
  REQUIRE(g.nodes[2].grad_norm == Approx(1.0));             // sum: dloss = 1
  REQUIRE(g.nodes[1].grad_norm == Approx(std::sqrt(2.0)));  // tanh: ones(2)
  REQUIRE(g.nodes[1].inputs[0].grad_norm == Approx(std::hypot(dax0, dax1)));
  REQUIRE(g.nodes[0].grad_norm == Approx(std::hypot(dax0, dax1)));  // mul receives it
  REQUIRE(g.nodes[0].inputs[0].grad_norm == Approx(2 * std::hypot(dax0, dax1)));
  REQUIRE(g.leaves[0].grad_norm == Approx(2 * std::hypot(dax0, dax1)));
  // Saved bytes: scalar mul saves nothing, tanh its output (2 doubles), sum nothing.
  REQUIRE(g.nodes[0].saved_bytes == 0);
  REQUIRE(g.nodes[1].saved_bytes == 16);
  REQUIRE(g.saved_bytes() == 16);
}

TEST_CASE(
    "inspect: without inspect mode the graph is complete but unknown input shapes show a question "
    "mark") {
  Tensor x = tensor(std::vector<float>{1, 2}).requires_grad_();
  Tensor w = tensor(std::vector<float>{3, 4});
  Tensor loss = mul(x, w).sum();
  loss.backward();
  Graph g = inspect(loss);
  REQUIRE(g.nodes.size() == 2);
  REQUIRE(g.nodes[0].inputs[1].kind == GraphInput::Kind::None);
  REQUIRE_FALSE(g.nodes[0].inputs[1].shape_known);
  REQUIRE(g.nodes[0].grad_norm == -1);  // not recorded
  InspectOptions o;
  o.seq = o.sites = false;
  REQUIRE(g.table(o).find("mul (2), ? (2)") != std::string::npos);
  // A tensor without history gives an empty graph; several roots share one.
  REQUIRE(inspect(w).nodes.empty());
  Tensor other = x.exp();
  REQUIRE(inspect(std::vector<Tensor>{loss, other}).nodes.size() == 3);
}

TEST_CASE("inspect: saved bytes of the main ops") {
  manual_seed(3);
  Tensor a = randn({4, 5}).requires_grad_(), b = randn({5, 6}).requires_grad_();
  REQUIRE(matmul(a, b).grad_fn()->saved_bytes == (20 + 30) * 4);  // both operands
  Tensor s = softmax(a, -1);
  REQUIRE(s.grad_fn()->saved_bytes == 20 * 4);  // its output
  Tensor ln = layer_norm(a, {5});
  REQUIRE(ln.grad_fn()->saved_bytes == 20 * 4 + 4 * 8 * 2);  // x, mean and rstd (double)
  Tensor idx = tensor(std::vector<int64_t>{0, 2, 2});
  REQUIRE(embedding(idx, b).grad_fn()->saved_bytes == 3 * 8);  // the indices
  Tensor tgt = tensor(std::vector<int64_t>{1, 0, 4, 2});
  REQUIRE(cross_entropy(a, tgt).grad_fn()->saved_bytes == 20 * 4 + 4 * 8 + 4 * 8);
  REQUIRE(bytes_str(1536) == "1.5 KiB");
  REQUIRE(bytes_str(-1) == "?");
}
