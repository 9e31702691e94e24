// tests/nn/test_module.cpp — the Module base: dotted names, traversal, parameter counts,
// train/eval, state dicts and their errors, to(dtype), summary text and forward hooks.
#include "helpers.hpp"

#include "nn/layers.hpp"
#include "nn/module.hpp"

#include <memory>

using namespace tg;

namespace {
// layers: ModuleList of Linear(4, 4) and Linear(4, 4, bias=false); norm: LayerNorm(4);
// head: Sequential(Linear(4, 2), Dropout(0.5)). x (N, 4) -> (N, 2).
struct Net : nn::TensorModule {
  std::shared_ptr<nn::ModuleList> layers;
  std::shared_ptr<nn::LayerNorm> norm;
  std::shared_ptr<nn::Sequential> head;
  Net() : TensorModule("Net") {
    layers = register_module(
        "layers",
        std::make_shared<nn::ModuleList>(std::initializer_list<nn::ModulePtr>{
            std::make_shared<nn::Linear>(4, 4), std::make_shared<nn::Linear>(4, 4, false)}));
    norm = register_module("norm", std::make_shared<nn::LayerNorm>(4));
    head = register_module(
        "head",
        std::make_shared<nn::Sequential>(std::initializer_list<std::shared_ptr<nn::TensorModule>>{
            std::make_shared<nn::Linear>(4, 2), std::make_shared<nn::Dropout>(0.5)}));
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = x;
    for (size_t i = 0; i < layers->size(); ++i) h = tanh(layers->at<nn::Linear>(i)->forward(h));
    return hooked({x}, head->forward(norm->forward(h)));
  }
};

std::vector<std::string> names(const std::vector<std::pair<std::string, Tensor>>& v) {
  std::vector<std::string> out;
  for (const auto& [n, t] : v) out.push_back(n);
  return out;
}
}  // namespace

TEST_CASE("named_parameters, buffers and modules use PyTorch's dotted names", "[module]") {
  manual_seed(0);
  auto net = std::make_shared<Net>();
  REQUIRE(names(net->named_parameters()) ==
          std::vector<std::string>{"layers.0.weight", "layers.0.bias", "layers.1.weight",
                                   "norm.weight", "norm.bias", "head.0.weight", "head.0.bias"});
  REQUIRE(net->named_parameters(false).empty());
  REQUIRE(net->parameters().size() == 7);
  REQUIRE(net->num_parameters() == 16 + 4 + 16 + 4 + 4 + 8 + 2);
  std::vector<std::string> mods;
  for (auto& [n, m] : net->named_modules()) mods.push_back(n + ":" + m->type_name());
  REQUIRE(mods == std::vector<std::string>{":Net", "layers:ModuleList", "layers.0:Linear",
                                           "layers.1:Linear", "norm:LayerNorm", "head:Sequential",
                                           "head.0:Linear", "head.1:Dropout"});
  REQUIRE(net->named_children().size() == 3);
  REQUIRE(net->children()[2].get() == net->head.get());
  auto pe = std::make_shared<nn::PositionalEncoding>(4, 16);
  REQUIRE(names(pe->named_buffers()) == std::vector<std::string>{"pe"});
  REQUIRE(pe->num_parameters() == 0);
  REQUIRE_ERROR(net->register_module("norm", std::make_shared<nn::ReLU>()),
                "Net.register_module: name \"norm\" is already registered");
  REQUIRE_ERROR(net->register_parameter("a.b", zeros({1})),
                "Net.register_parameter: name \"a.b\" must be non-empty");
  REQUIRE_ERROR(net->layers->at<nn::LayerNorm>(0),
                "ModuleList: element 0 is a Linear, not the requested type");
}

TEST_CASE("a parameter shared by two modules is listed once - state_dict lists both names",
          "[module]") {
  auto root = std::make_shared<Net>();
  auto tied = std::make_shared<nn::Linear>(4, 4);
  tied->register_parameter("shared", root->norm->weight);
  root->register_module("tied", tied);
  REQUIRE(root->named_parameters().size() ==
          9);  // 7 + tied.weight + tied.bias; tied.shared is norm.weight
  REQUIRE(root->state_dict().size() == 10);
  REQUIRE(root->state_dict().contains("tied.shared"));
}

TEST_CASE("train/eval reaches every submodule and switches Dropout", "[module]") {
  manual_seed(1);
  auto net = std::make_shared<Net>();
  auto drop = std::dynamic_pointer_cast<nn::Dropout>((*net->head)[1]);
  REQUIRE(drop->is_training());
  Tensor x = ones({64, 4});
  Tensor y = drop->forward(x);
  int zeros_seen = 0;
  for (float v : y.to_vector<float>()) {
    REQUIRE((v == 0.0f || v == 2.0f));
    zeros_seen += v == 0.0f;
  }
  REQUIRE(zeros_seen > 64);
  REQUIRE(zeros_seen < 192);
  net->eval();
  REQUIRE_FALSE(drop->is_training());
  REQUIRE_FALSE(net->layers->is_training());
  REQUIRE(drop->forward(x).to_vector<float>() == x.to_vector<float>());
  Tensor a = net->forward(x), b = net->forward(x);
  REQUIRE(a.to_vector<float>() == b.to_vector<float>());
  net->train();
  REQUIRE(drop->is_training());
}

TEST_CASE("state_dict round trip and zero_grad", "[module]") {
  manual_seed(2);
  auto src = std::make_shared<Net>();
  manual_seed(3);
  auto dst = std::make_shared<Net>();
  src->eval();
  dst->eval();
  Tensor x = randn({3, 4});
  REQUIRE(src->forward(x).to_vector<float>() != dst->forward(x).to_vector<float>());
  nn::StateDict sd = src->state_dict();
  REQUIRE(sd.keys() == names(src->named_parameters()));
  REQUIRE(sd.at("norm.weight").data_ptr() ==
          src->norm->weight.data_ptr());  // aliases, like PyTorch
  Tensor w_before = dst->norm->weight;
  nn::LoadResult r = dst->load_state_dict(sd);
  REQUIRE(r.missing_keys.empty());
  REQUIRE(dst->norm->weight.same(w_before));  // copied in place
  REQUIRE(src->forward(x).to_vector<float>() == dst->forward(x).to_vector<float>());

  dst->forward(x).sum().backward();
  REQUIRE(dst->head->named_parameters()[0].second.grad().defined());
  dst->zero_grad(false);
  REQUIRE(dst->head->named_parameters()[0].second.grad().to_vector<float>() ==
          std::vector<float>(8, 0.0f));
  dst->zero_grad();
  for (Tensor& p : dst->parameters()) REQUIRE_FALSE(p.grad().defined());
}

TEST_CASE("load_state_dict writes a strided parameter through its view", "[module][views]") {
  // w (3, 4) = a.t() of a (4, 3), strides (1, 3); v (2, 3) = b's columns 1..3: views as leaves.
  struct Views : nn::Module {
    Tensor a = randn({4, 3}, kFloat64), b = zeros({2, 5}, kFloat64), w, v;
    Views() : nn::Module("Views") {
      w = a.t().detach();
      v = b.narrow(1, 1, 3).detach();
      register_parameter("w", &w);
      register_parameter("v", &v);
    }
  };
  manual_seed(8);
  Views m;
  nn::StateDict sd;
  sd.insert("w", arange(0.0, 12.0, 1.0, kFloat64).reshape({3, 4}));
  sd.insert("v", full({2, 3}, 7.0, kFloat64));
  m.load_state_dict(sd);
  REQUIRE(m.w.to_vector<double>() == arange(0.0, 12.0, 1.0, kFloat64).to_vector<double>());
  REQUIRE(m.a.to_vector<double>() == m.w.t().contiguous().to_vector<double>());
  REQUIRE(m.b.to_vector<double>() == std::vector<double>{0, 7, 7, 7, 0, 0, 7, 7, 7, 0});
  REQUIRE_FALSE(m.w.is_contiguous());  // still the view
}

TEST_CASE("load_state_dict reports missing, unexpected and mismatched keys", "[module]") {
  auto net = std::make_shared<Net>();
  nn::StateDict sd;
  for (const auto& [k, t] : net->state_dict()) sd.insert(k, t.clone());
  nn::StateDict missing = sd;
  missing.erase("norm.bias");
  missing.erase("layers.1.weight");
  REQUIRE_ERROR(net->load_state_dict(missing),
                "Net.load_state_dict: 1 error(s):\n  missing keys: layers.1.weight, norm.bias");
  nn::LoadResult r = net->load_state_dict(missing, /*strict=*/false);
  REQUIRE(r.missing_keys == std::vector<std::string>{"layers.1.weight", "norm.bias"});

  nn::StateDict extra = sd;
  extra.insert("head.2.weight", zeros({1}));
  REQUIRE_ERROR(net->load_state_dict(extra), "unexpected keys: head.2.weight");
  REQUIRE(net->load_state_dict(extra, false).unexpected_keys ==
          std::vector<std::string>{"head.2.weight"});

  nn::StateDict bad = missing;
  bad.insert("head.2.weight", zeros({1}));
  bad.at("head.0.weight") = zeros({2, 5});
  bad.at("norm.weight") = zeros({4}, kFloat64);
  REQUIRE_ERROR(net->load_state_dict(bad),
                "Net.load_state_dict: 4 error(s):\n"
                "  missing keys: layers.1.weight, norm.bias\n"
                "  unexpected keys: head.2.weight\n"
                "  dtype mismatch for norm.weight: checkpoint float64, model float32\n"
                "  shape mismatch for head.0.weight: checkpoint (2,5), model (2,4)");
  // Shape errors are raised even when not strict, and nothing is copied.
  std::vector<float> before = net->norm->bias.to_vector<float>();
  bad.insert("norm.bias", full({4}, 7.0));
  REQUIRE_ERROR(net->load_state_dict(bad, false),
                "shape mismatch for head.0.weight: checkpoint (2,5), model (2,4)");
  REQUIRE(net->norm->bias.to_vector<float>() == before);
}

TEST_CASE("to(kFloat64) converts parameters and buffers in place", "[module]") {
  auto lin = std::make_shared<nn::Linear>(3, 2);
  std::vector<float> w32 = lin->weight.to_vector<float>();
  Tensor handle = lin->weight;
  lin->to(kFloat64);
  REQUIRE(handle.dtype() == kFloat64);
  REQUIRE(lin->named_parameters()[0].second.dtype() == kFloat64);
  std::vector<double> w64 = lin->weight.to_vector<double>();
  for (size_t i = 0; i < w32.size(); ++i) REQUIRE(w64[i] == double(w32[i]));
  REQUIRE(lin->weight.requires_grad());
  auto pe = std::make_shared<nn::PositionalEncoding>(4, 8);
  pe->to(kFloat64);
  REQUIRE(pe->pe.dtype() == kFloat64);
  REQUIRE_ERROR(lin->to(kInt64), "Linear.to: dtype must be floating, got int64");
  REQUIRE_ERROR(lin->forward(ones({1, 3})),
                "Linear(3, 2): input (1,3) is float32 but weight is float64");
}

TEST_CASE("summary prints the tree, shapes and parameter counts", "[module]") {
  auto net = std::make_shared<Net>();
  REQUIRE(net->summary() ==
          "Net(): 54 parameters\n"
          "  (layers) ModuleList(): 36 parameters\n"
          "    (0) Linear(in_features=4, out_features=4, bias=True): 20 parameters\n"
          "      weight (4,4) float32\n"
          "      bias (4) float32\n"
          "    (1) Linear(in_features=4, out_features=4, bias=False): 16 parameters\n"
          "      weight (4,4) float32\n"
          "  (norm) LayerNorm((4), eps=1e-05, elementwise_affine=True): 8 parameters\n"
          "    weight (4) float32\n"
          "    bias (4) float32\n"
          "  (head) Sequential(): 10 parameters\n"
          "    (0) Linear(in_features=4, out_features=2, bias=True): 10 parameters\n"
          "      weight (2,4) float32\n"
          "      bias (2) float32\n"
          "    (1) Dropout(p=0.5): 0 parameters\n"
          "Total parameters: 54 (trainable 54)\n");
}

TEST_CASE("forward hooks see the module, inputs and output", "[module]") {
  auto net = std::make_shared<Net>();
  auto lin = net->layers->at<nn::Linear>(0);
  std::vector<std::string> seen;
  Tensor hook_in, hook_out;
  int id = lin->register_forward_hook(
      [&](nn::Module& m, const std::vector<Tensor>& in, const Tensor& out) {
        seen.push_back(m.repr());
        hook_in = in.at(0);
        hook_out = out;
      });
  net->register_forward_hook([&](nn::Module& m, const std::vector<Tensor>& in, const Tensor& out) {
    seen.push_back(m.type_name() + shape_str(in[0].shape()) + "->" + shape_str(out.shape()));
  });
  Tensor x = randn({3, 4});
  net->eval();
  Tensor y = net->forward(x);
  REQUIRE(seen == std::vector<std::string>{"Linear(in_features=4, out_features=4, bias=True)",
                                           "Net(3,4)->(3,2)"});
  REQUIRE(hook_in.same(x));
  tgt::require_close(hook_out, linear(x, lin->weight, lin->bias), 0, 0);
  lin->remove_forward_hook(id);
  net->forward(x);
  REQUIRE(seen.size() == 3);
  REQUIRE_ERROR(lin->remove_forward_hook(id), "Linear.remove_forward_hook: no hook with id 0");
}

TEST_CASE("ModuleDict: insertion order, state_dict names, replacement in place, errors",
          "[module]") {
  auto d =
      std::make_shared<nn::ModuleDict>(std::initializer_list<std::pair<std::string, nn::ModulePtr>>{
          {"enc", std::make_shared<nn::Linear>(3, 4)}, {"act", std::make_shared<nn::ReLU>()}});
  d->insert("dec", std::make_shared<nn::Linear>(4, 2, false));
  REQUIRE(d->size() == 3);
  REQUIRE(d->keys() == std::vector<std::string>{"enc", "act", "dec"});
  REQUIRE(d->contains("act"));
  std::vector<std::string> names;
  for (const auto& [n, p] : d->named_parameters()) names.push_back(n);
  REQUIRE(names == std::vector<std::string>{"enc.weight", "enc.bias", "dec.weight"});
  REQUIRE(d->at<nn::Linear>("dec")->out_features == 2);
  // replacing keeps the position (PyTorch's update)
  d->insert("enc", std::make_shared<nn::Linear>(3, 5, false));
  names.clear();
  for (const auto& [n, p] : d->named_parameters()) names.push_back(n);
  REQUIRE(names == std::vector<std::string>{"enc.weight", "dec.weight"});
  REQUIRE(d->at<nn::Linear>("enc")->out_features == 5);
  nn::ModulePtr act = d->pop("act");
  REQUIRE(act->type_name() == "ReLU");
  REQUIRE(d->keys() == std::vector<std::string>{"enc", "dec"});
  REQUIRE_ERROR((*d)["act"], "ModuleDict: no key \"act\" (keys: enc, dec)");
  REQUIRE_ERROR(d->at<nn::ReLU>("enc"), "ModuleDict: \"enc\" is a Linear, not the requested type");
  REQUIRE_ERROR(d->insert("a.b", std::make_shared<nn::ReLU>()), "a.b");
}
