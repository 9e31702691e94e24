// tests/nn/test_transformer_safetensors.cpp — the safetensors format both ways on the Transformer
// fixtures: tests/fixtures/safetensors/transformer/<config>.safetensors holds a configuration's
// parameters alone, in named_parameters() order with the metadata last, as a PyTorch export lays
// them out (written by tools/make_transformer_fixtures.py with plain struct + json, not the
// safetensors package), beside the case file tests/fixtures/transformer/<config>.safetensors:
//   - Python -> C++: every tensor in the file equals the case's parameter bit for bit, and a module
//     built from the case's configuration and filled with tg::nn::load_model (strict, not the
//     case's parameters) reproduces torch 1.13's output and input / parameter gradients (float64,
//     1e-10);
//   - C++ -> C++: save_safetensors of the module's state_dict reads back identical tensors (names,
//     order, dtype, shape, bytes) and metadata, and load_model of that file into a freshly
//     initialised module gives the same PyTorch parity.
#include "fixtures.hpp"
#include "helpers.hpp"

#include "nn/checkpoint.hpp"
#include "nn/transformer.hpp"

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

using namespace tg;
using nn::Transformer;
using nn::TransformerDecoder;
using nn::TransformerDecoderLayer;
using nn::TransformerEncoder;
using nn::TransformerEncoderLayer;
namespace fs = std::filesystem;

namespace {
// Every configuration kind: encoder / decoder layers, stacks with a final norm, full Transformers.
const std::vector<std::string> kConfigs = {"enc_post_relu",       "enc_pre_gelu_bf",
                                           "dec_post_relu",       "dec_post_gelu_bf_mm",
                                           "encoder_2layer_norm", "decoder_2layer_norm_pre",
                                           "transformer_1_1",     "transformer_1_1_bf_masks"};

std::map<std::string, std::string> read_config(const std::string& name) {
  return tgt::Fixture("transformer/" + name).metadata();
}
std::vector<std::string> split(const std::string& s) { return tgt::split(s); }
Tensor fx(const std::string& cfg, const std::string& tensor) {
  return tgt::Fixture("transformer/" + cfg).tensor(tensor);
}
nn::TransformerLayerOptions layer_options(std::map<std::string, std::string>& cfg) {
  nn::TransformerLayerOptions o;
  o.dim_feedforward = std::stoll(cfg.at("dim_feedforward"));
  o.dropout = 0.0;
  o.activation = cfg.at("activation");
  o.norm_first = cfg.at("norm_first") == "1";
  o.batch_first = cfg.at("batch_first") == "1";
  return o;
}
// ---- end of the copy ----

std::string weights_path(const std::string& name) {
  return tgt::fixture_path("safetensors/transformer/" + name);
}

// A module built from the case's configuration exactly as test_transformer.cpp builds it (float64,
// freshly initialised: its weights come from elsewhere), its inputs (leaves) and a closure running
// it.
struct Case {
  std::shared_ptr<nn::Module> mod;
  std::map<std::string, Tensor> in;
  std::function<Tensor()> run;
};

Case build(const std::string& name) {
  auto cfg = read_config(name);
  const int64_t E = std::stoll(cfg.at("d_model")), NH = std::stoll(cfg.at("nhead"));
  const int64_t L = std::stoll(cfg.at("num_layers"));
  const std::string kind = cfg.at("module");
  nn::TransformerLayerOptions lo = layer_options(cfg);
  Case c;
  std::map<std::string, Tensor> mask;
  for (const std::string& n : split(cfg.at("inputs")))
    c.in[n] = fx(name, n).to(kFloat64).detach().requires_grad_();
  for (const std::string& n : split(cfg.at("masks"))) {
    Tensor m = fx(name, n);
    mask[n] = m.dtype() == kBool ? m : m.to(kFloat64);
  }
  auto M = [mask](const char* n) { return mask.count(n) ? mask.at(n) : Tensor(); };
  const std::map<std::string, Tensor> in = c.in;
  if (kind == "enc_layer") {
    auto m = std::make_shared<TransformerEncoderLayer>(E, NH, lo);
    c.run = [=] { return m->forward(in.at("src"), M("src_mask"), M("src_key_padding_mask")); };
    c.mod = m;
  } else if (kind == "encoder") {
    auto m = std::make_shared<TransformerEncoder>(TransformerEncoderLayer(E, NH, lo), L,
                                                  std::make_shared<nn::LayerNorm>(E));
    c.run = [=] { return m->forward(in.at("src"), M("src_mask"), M("src_key_padding_mask")); };
    c.mod = m;
  } else if (kind == "dec_layer" || kind == "decoder") {
    std::function<Tensor(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                         const Tensor&)>
        f;
    if (kind == "dec_layer") {
      auto m = std::make_shared<TransformerDecoderLayer>(E, NH, lo);
      c.mod = m;
      f = [m](auto&... a) { return m->forward(a...); };
    } else {
      auto m = std::make_shared<TransformerDecoder>(TransformerDecoderLayer(E, NH, lo), L,
                                                    std::make_shared<nn::LayerNorm>(E));
      c.mod = m;
      f = [m](auto&... a) { return m->forward(a...); };
    }
    c.run = [=] {
      return f(in.at("tgt"), in.at("memory"), M("tgt_mask"), M("memory_mask"),
               M("tgt_key_padding_mask"), M("memory_key_padding_mask"));
    };
  } else {
    REQUIRE(kind == "transformer");
    nn::TransformerOptions o;
    o.d_model = E;
    o.nhead = NH;
    o.num_encoder_layers = o.num_decoder_layers = 1;
    o.dim_feedforward = lo.dim_feedforward;
    o.dropout = 0.0;
    o.activation = lo.activation;
    o.batch_first = lo.batch_first;
    o.norm_first = lo.norm_first;
    auto m = std::make_shared<Transformer>(o);
    c.run = [=] {
      return m->forward(in.at("src"), in.at("tgt"), M("src_mask"), M("tgt_mask"), M("memory_mask"),
                        M("src_key_padding_mask"), M("tgt_key_padding_mask"),
                        M("memory_key_padding_mask"));
    };
    c.mod = m;
  }
  c.mod->to(kFloat64);
  return c;
}

// Forward, backward with d_out, and every output / gradient against torch (float64, 1e-10).
void require_parity(const std::string& name, Case& c, const std::string& how) {
  Tensor out = c.run();
  const std::string what = name + " (" + how + ")";
  tgt::require_close(out, fx(name, "out"), 1e-10, 1e-10, what + " out");
  out.backward(fx(name, "d_out"));
  for (auto& [n, t] : c.in)
    tgt::require_close(t.grad(), fx(name, "d_" + n), 1e-10, 1e-10, what + " d_" + n);
  auto params = c.mod->named_parameters();
  REQUIRE(params.size() == split(read_config(name).at("params")).size());
  for (auto& [pname, p] : params)
    tgt::require_close(p.grad(), fx(name, "d_" + pname), 1e-10, 1e-10, what + " d_" + pname);
}

std::string raw(const Tensor& t) {
  return std::string(static_cast<const char*>(t.data_ptr()),
                     static_cast<size_t>(t.numel()) * dtype_size(t.dtype()));
}
// Same names in the same order, same dtype, shape and bytes.
void require_identical(const nn::StateDict& a, const nn::StateDict& b, const std::string& what) {
  INFO(what);
  REQUIRE(a.keys() == b.keys());
  for (const auto& [k, t] : a) {
    INFO(k);
    const Tensor& u = b.at(k);
    REQUIRE(t.dtype() == u.dtype());
    REQUIRE(t.shape() == u.shape());
    REQUIRE(raw(t) == raw(u));
  }
}

// The case file's parameters as a StateDict, in its "params" order (named_parameters()).
nn::StateDict case_params(const std::string& name) {
  nn::StateDict sd;
  for (const std::string& p : split(read_config(name).at("params"))) sd.insert(p, fx(name, p));
  return sd;
}

// A file under the system temp dir, removed at the end of the test.
struct TempFile {
  std::string path;
  explicit TempFile(const std::string& stem)
      : path(
            (fs::temp_directory_path() / (stem + "_" + std::to_string(::getpid()) + ".safetensors"))
                .string()) {}
  ~TempFile() {
    std::error_code ec;
    fs::remove(path, ec);
  }
};
}  // namespace

TEST_CASE("Python-written weights equal the case file's parameters bit for bit",
          "[transformer][safetensors]") {
  for (const std::string& name : kConfigs) {
    INFO(name);
    nn::SafetensorsFile f = nn::load_safetensors(weights_path(name));
    nn::StateDict want = case_params(name);
    for (const auto& [k, t] : want) REQUIRE(t.dtype() == kFloat64);
    require_identical(f.tensors, want, name + ": weights file vs case file");
    REQUIRE(f.metadata.size() == 3);
    REQUIRE(f.metadata.at("format") == "pt");
    REQUIRE(f.metadata.at("config") == name);
    REQUIRE(f.metadata.at("torch").rfind("1.13", 0) == 0);
  }
}

TEST_CASE("load_model of the Python-written file reproduces PyTorch (float64, 1e-10)",
          "[transformer][safetensors]") {
  for (const std::string& name : kConfigs) {
    SECTION(name) {
      manual_seed(7);
      Case c = build(name);
      // The fresh module's weights differ from the file's, so the parity below comes from it.
      nn::StateDict file = nn::load_safetensors(weights_path(name)).tensors;
      const std::string first = file.keys().front();
      REQUIRE(raw(c.mod->state_dict().at(first)) != raw(file.at(first)));
      nn::LoadResult r = nn::load_model(weights_path(name), *c.mod, /*strict=*/true);
      REQUIRE(r.missing_keys.empty());
      REQUIRE(r.unexpected_keys.empty());
      require_identical(c.mod->state_dict(), file, name + ": module after load_model");
      require_parity(name, c, "load_model of the Python file");
    }
  }
}

TEST_CASE("save_safetensors of the state_dict reads back identical and loads into a fresh module",
          "[transformer][safetensors]") {
  for (const std::string& name : kConfigs) {
    SECTION(name) {
      manual_seed(8);
      Case a = build(name);
      nn::load_model(weights_path(name), *a.mod, true);
      TempFile tmp("tg_tf_" + name);
      const nn::Metadata meta{{"config", name}, {"writer", "tapegrad"}};
      const nn::StateDict sd = a.mod->state_dict();
      nn::save_safetensors(tmp.path, sd, meta);
      nn::SafetensorsFile back = nn::load_safetensors(tmp.path);
      require_identical(back.tensors, sd, name + ": saved state_dict read back");
      REQUIRE(back.metadata == meta);
      require_identical(back.tensors, case_params(name), name + ": saved state_dict vs case file");

      manual_seed(9);
      Case b = build(name);
      nn::LoadResult r = nn::load_model(tmp.path, *b.mod, /*strict=*/true);
      REQUIRE((r.missing_keys.empty() && r.unexpected_keys.empty()));
      require_parity(name, b, "load_model of the C++-written file");
    }
  }
}

TEST_CASE("float32 modules: load_model needs convert_dtypes, and a float32 round trip is exact",
          "[transformer][safetensors]") {
  const std::string name = "transformer_1_1_bf_masks";
  manual_seed(10);
  Case c = build(name);
  c.mod->to(kFloat32);
  REQUIRE_ERROR(nn::load_model(weights_path(name), *c.mod, true),
                "load_model: " + weights_path(name) +
                    ": Transformer.load_state_dict: 34 error(s):\n  dtype mismatch for "
                    "encoder.layers.0.self_attn.in_proj_weight: checkpoint float64, model float32");
  nn::load_model(weights_path(name), *c.mod, true, /*convert_dtypes=*/true);
  nn::StateDict want = case_params(name);
  for (const auto& [k, t] : c.mod->state_dict()) {
    INFO(k);
    REQUIRE(t.dtype() == kFloat32);
    REQUIRE(raw(t) == raw(want.at(k).to(kFloat32)));  // converted exactly like Tensor::to
  }
  TempFile tmp("tg_tf_f32");
  nn::save_safetensors(tmp.path, c.mod->state_dict());
  nn::SafetensorsFile back = nn::load_safetensors(tmp.path);
  require_identical(back.tensors, c.mod->state_dict(), "float32 round trip");
  REQUIRE(back.metadata.empty());
}
