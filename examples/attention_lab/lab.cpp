// examples/attention_lab/lab.cpp — the attention lab (lab.hpp): options, weights (fresh or from a
// checkpoint), the step-by-step forward and backward with captured intermediates, the shape
// walk-through, heatmaps + NPY files, and gradient reaching each key.
#include "attention_lab/lab.hpp"

#include "attention_lab/model_lab.hpp"

#include "autograd/io.hpp"
#include "autograd/tape.hpp"
#include "common/cli.hpp"
#include "common/png.hpp"
#include "common/text.hpp"
#include "nn/attention.hpp"
#include "nn/checkpoint.hpp"
#include "ops/ops.hpp"
#include "text_classification/train.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>

namespace tgx::lab {

using tg::Tensor;
namespace fs = std::filesystem;

namespace {

struct Config {
  int64_t B = 1, T = 6, E = 8, NH = 2;
  tg::AttentionMask structure;   // causal / local / blocked
  std::vector<int64_t> lengths;  // key lengths per batch (padding), empty: none
  std::vector<std::string> tokens;
  std::string out;
  uint64_t seed = 0;
};

struct Weights {
  Tensor w_in, b_in, w_out, b_out;  // (3E, E), (3E), (E, E), (E): PyTorch's names and layout
  std::string source;
};

std::string shape_str(const tg::Shape& s) {
  std::string o = "(";
  for (size_t i = 0; i < s.size(); ++i) o += (i ? ", " : "") + std::to_string(s[i]);
  return o + (s.size() == 1 ? ",)" : ")");
}

double norm(const Tensor& t) { return std::sqrt(tg::sum(tg::mul(t, t)).item<double>()); }

// ---- weights -----------------------------------------------------------------------------------
Weights fresh_weights(const Config& c) {
  tg::manual_seed(c.seed);
  tg::nn::MultiheadAttention mha(c.E, c.NH);  // PyTorch's initialisation
  mha.to(tg::kFloat64);
  Weights w;
  auto sd = mha.state_dict();
  w.w_in = sd.at("in_proj_weight").detach();
  w.b_in = sd.at("in_proj_bias").detach();
  w.w_out = sd.at("out_proj.weight").detach();
  w.b_out = sd.at("out_proj.bias").detach();
  w.source = fmt::format("fresh nn::MultiheadAttention({}, {}), seed {}", c.E, c.NH, c.seed);
  return w;
}

Weights checkpoint_weights(const std::string& path_in, std::string layer) {
  std::string path = path_in;
  if (dir_exists(path)) {
    path = tg::nn::checkpoint_model_path(path);
    if (!file_exists(path)) {  // a folder, but not a checkpoint: say what would be one
      std::vector<std::string> inside;
      for (const char* sub : {"best", "last"})
        if (file_exists(tg::nn::checkpoint_model_path(path_in + "/" + sub)))
          inside.push_back(path_in + "/" + sub);
      throw UserError(fmt::format(
          "--checkpoint {}: this folder holds no model.safetensors (expected a checkpoint folder "
          "holding one, or the file itself){}",
          path_in,
          inside.empty() ? std::string()
                         : fmt::format("; it is a run folder: try --checkpoint {}",
                                       fmt::join(inside, " or --checkpoint "))));
    }
  }
  if (!file_exists(path))
    throw UserError("--checkpoint " + path_in +
                    ": no such file (give a model.safetensors file or a checkpoint directory)");
  tg::nn::SafetensorsFile f;
  try {
    f = tg::nn::load_safetensors(path);
  } catch (const tg::Error& e) {
    throw UserError(std::string("--checkpoint: ") + e.what());
  }
  std::vector<std::string> layers;
  const std::string suffix = ".in_proj_weight";
  for (const auto& [name, t] : f.tensors)
    if (name.size() > suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      layers.push_back(name.substr(0, name.size() - suffix.size()));
  std::string list;
  for (const auto& l : layers) list += "\n  " + l;
  if (layers.empty())
    throw UserError(path + ": holds no MultiheadAttention (no *.in_proj_weight tensor)");
  if (layer.empty()) {
    if (layers.size() > 1)
      throw UserError(path + ": holds several attention layers; choose one with --layer:" + list);
    layer = layers[0];
  }
  for (const char* k : {".in_proj_weight", ".in_proj_bias", ".out_proj.weight", ".out_proj.bias"})
    if (!f.tensors.contains(layer + k))
      throw UserError(path + ": no tensor " + layer + k +
                      "; attention layers in this file:" + list);
  Weights w;
  w.w_in = f.tensors.at(layer + ".in_proj_weight").to(tg::kFloat64);
  w.b_in = f.tensors.at(layer + ".in_proj_bias").to(tg::kFloat64);
  w.w_out = f.tensors.at(layer + ".out_proj.weight").to(tg::kFloat64);
  w.b_out = f.tensors.at(layer + ".out_proj.bias").to(tg::kFloat64);
  int64_t E = w.w_out.size(0);
  if (w.w_in.dim() != 2 || w.w_in.size(0) != 3 * E || w.w_in.size(1) != E)
    throw UserError(path + ": " + layer + ".in_proj_weight is " + shape_str(w.w_in.shape()) +
                    ", expected (3E, E) = (" + std::to_string(3 * E) + ", " + std::to_string(E) +
                    ")");
  w.source = path + " : " + layer;
  return w;
}

// ---- the step-by-step layer
// ------------------------------------------------------------------------ Every intermediate the
// walk-through shows, and the gradient that reached it.
struct Step {
  std::string name, formula;
  Tensor value, grad;
};

struct Run {
  std::vector<Step> steps;
  Tensor S, P, dP, dS;  // (B, NH, T, S)
  Tensor x, out, dx, dq, dk, dv;
};

Run run_layer(const Config& c, const Weights& w, const Tensor& x_in,
              const tg::AttentionMask& mask) {
  Run r;
  const int64_t B = c.B, T = c.T, E = c.E, NH = c.NH, hs = E / NH;
  r.steps.reserve(16);
  auto keep = [&](const std::string& name, const std::string& formula, Tensor t) {
    r.steps.push_back({name, formula, t, Tensor()});
    size_t idx = r.steps.size() - 1;
    if (t.requires_grad())
      t.register_hook([&r, idx](const Tensor& g) {
        r.steps[idx].grad = g.detach().clone();
        return Tensor();
      });
    return t;
  };
  Tensor x = x_in.detach().clone().requires_grad_();
  r.x = x;
  keep("x", "input (B, T, E)", x);
  Tensor wq = w.w_in.narrow(0, 0, E), wk = w.w_in.narrow(0, E, E), wv = w.w_in.narrow(0, 2 * E, E);
  Tensor bq = w.b_in.narrow(0, 0, E), bk = w.b_in.narrow(0, E, E), bv = w.b_in.narrow(0, 2 * E, E);
  Tensor q = keep("q", "x W_q^T + b_q   (in_proj rows 0..E-1)", tg::linear(x, wq, bq));
  Tensor k = keep("k", "x W_k^T + b_k   (rows E..2E-1)", tg::linear(x, wk, bk));
  Tensor v = keep("v", "x W_v^T + b_v   (rows 2E..3E-1)", tg::linear(x, wv, bv));
  auto heads = [&](const Tensor& t) { return t.reshape({B, T, NH, hs}).permute({0, 2, 1, 3}); };
  Tensor qh = keep("q heads", "reshape (B, T, NH, hs), permute -> (B, NH, T, hs)", heads(q));
  Tensor kh = keep("k heads", "same split", heads(k));
  Tensor vh = keep("v heads", "same split", heads(v));
  tg::AttentionProbe probe;
  probe.on_forward = [&](const Tensor& s, const Tensor& p) { r.S = s.clone(), r.P = p.clone(); };
  probe.on_backward = [&](const Tensor& dp, const Tensor& ds) {
    r.dP = dp.clone(), r.dS = ds.clone();
  };
  tg::SDPAOptions so;
  so.probe = &probe;
  Tensor o = keep("O", "softmax(q k^T / sqrt(hs) + mask) v   (S, P inside the fused node)",
                  tg::scaled_dot_product_attention(qh, kh, vh, mask, so).output);
  Tensor merged = keep("merged", "permute (B, T, NH, hs), reshape -> (B, T, E)",
                       o.permute({0, 2, 1, 3}).reshape({B, T, E}));
  Tensor out = keep("out", "merged W_o^T + b_o", tg::linear(merged, w.w_out, w.b_out));
  // A seeded upstream gradient G stands for the rest of the network: loss = sum(out * G).
  tg::manual_seed(c.seed + 1);
  Tensor G = tg::randn({B, T, E}, tg::kFloat64);
  Tensor loss = tg::sum(tg::mul(out, G));
  loss.backward();
  r.out = out.detach();
  r.dx = x.grad();
  for (auto& s : r.steps) {
    if (s.name == "q heads") r.dq = s.grad;
    if (s.name == "k heads") r.dk = s.grad;
    if (s.name == "v heads") r.dv = s.grad;
  }
  if (!r.dx.defined()) r.dx = tg::zeros_like(x);
  return r;
}

// ---- output ------------------------------------------------------------------------------------
void print_walkthrough(const Config& c, const Run& r, const tg::AttentionMask& mask) {
  const int64_t hs = c.E / c.NH;
  std::printf("\nforward  (B=%lld, T=S=%lld, E=%lld, NH=%lld, hs=%lld), mask: %s\n", (long long)c.B,
              (long long)c.T, (long long)c.E, (long long)c.NH, (long long)hs, mask.name().c_str());
  auto line = [](const std::string& n, const tg::Shape& s, double nrm, const std::string& f) {
    std::string nr = std::isfinite(nrm) ? fmt::format("{:.4g}", nrm) : "-";
    std::printf("  %-10s %-16s |.| %-10s %s\n", n.c_str(), shape_str(s).c_str(), nr.c_str(),
                f.c_str());
  };
  for (const auto& s : r.steps) {
    line(s.name, s.value.shape(), norm(s.value.detach()), s.formula);
    if (s.name == "v heads") {
      line("S", r.S.shape(), NAN, "q k^T / sqrt(hs) + mask   (blocked: -inf)");
      line("P", r.P.shape(), norm(r.P), "softmax over keys (rows sum to 1, fully masked rows 0)");
    }
  }
  std::printf("  %-10s %-16s            sum(out * G), G a seeded upstream gradient (B, T, E)\n",
              "loss", "()");
  std::printf("\nbackward (the tape in reverse)\n");
  for (auto it = r.steps.rbegin(); it != r.steps.rend(); ++it) {
    if (it->name == "O") {
      line("dP", r.dP.shape(), norm(r.dP), "dO v^T");
      line("dS", r.dS.shape(), norm(r.dS), "P * (dP - rowsum(dP * P))   (softmax backward)");
    }
    std::string formula = it->name == "out"       ? "= G"
                          : it->name == "merged"  ? "dout W_o"
                          : it->name == "O"       ? "reshape + permute of dmerged"
                          : it->name == "q heads" ? "dS k / sqrt(hs)"
                          : it->name == "k heads" ? "dS^T q / sqrt(hs)"
                          : it->name == "v heads" ? "P^T dO"
                          : it->name == "x"       ? "dq W_q + dk W_k + dv W_v"
                                                  : "merge heads back: permute + reshape";
    if (it->grad.defined()) line("d" + it->name, it->grad.shape(), norm(it->grad), formula);
  }
}

void write_maps(const Config& c, const Run& r) {
  fs::create_directories(c.out);
  tg::save_npy(c.out + "/S.npy", r.S);
  tg::save_npy(c.out + "/P.npy", r.P);
  tg::save_npy(c.out + "/dP.npy", r.dP);
  tg::save_npy(c.out + "/dS.npy", r.dS);
  tg::save_npy(c.out + "/x.npy", r.x.detach());
  tg::save_npy(c.out + "/dx.npy", r.dx);
  const int64_t T = c.T;
  std::vector<std::string> labels = c.tokens;
  if (labels.empty())
    for (int64_t i = 0; i < T; ++i) labels.push_back(std::to_string(i));
  struct Map {
    const char* name;
    const Tensor* t;
    bool symmetric;
  };
  for (Map m : {Map{"S", &r.S, false}, Map{"P", &r.P, false}, Map{"dP", &r.dP, true},
                Map{"dS", &r.dS, true}}) {
    std::vector<double> all = m.t->to_vector<double>();
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t h = 0; h < c.NH; ++h) {
        std::vector<double> vals(all.begin() + (b * c.NH + h) * T * T,
                                 all.begin() + (b * c.NH + h + 1) * T * T);
        if (std::string(m.name) == "S")
          for (double& v : vals)
            if (std::isinf(v)) v = NAN;  // blocked: grey
        HeatmapOptions o;
        o.title = fmt::format("{}  batch {} head {}  (rows: queries, columns: keys)", m.name, b, h);
        o.row_labels = labels;
        o.col_labels = labels;
        o.symmetric = m.symmetric;
        write_png(fmt::format("{}/{}_b{}_h{}.png", c.out, m.name, b, h),
                  heatmap(vals, int(T), int(T), o));
      }
  }
}

void print_key_gradients(const Config& c, const Run& r) {
  std::printf(
      "\ngradient reaching each key position (batch, key: |dk|, |dv|, sum_i |dS[i, key]| per "
      "head)\n");
  auto dk = r.dk.to_vector<double>(), dv = r.dv.to_vector<double>(), ds = r.dS.to_vector<double>();
  const int64_t T = c.T, NH = c.NH, hs = c.E / c.NH;
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t j = 0; j < T; ++j) {
      double nk = 0, nv = 0;
      std::string per_head;
      for (int64_t h = 0; h < NH; ++h) {
        for (int64_t d = 0; d < hs; ++d) {
          size_t at = size_t(((b * NH + h) * T + j) * hs + d);
          nk += dk[at] * dk[at], nv += dv[at] * dv[at];
        }
        double s = 0;
        for (int64_t i = 0; i < T; ++i) s += std::fabs(ds[size_t(((b * NH + h) * T + i) * T + j)]);
        per_head += fmt::format(" {:9.4f}", s);
      }
      std::string tok = j < int64_t(c.tokens.size()) ? c.tokens[size_t(j)] : "";
      std::printf("  b%lld key %-3lld %-10s |dk| %9.4f  |dv| %9.4f  dS:%s\n", (long long)b,
                  (long long)j, tok.c_str(), std::sqrt(nk), std::sqrt(nv), per_head.c_str());
    }
}

// The lab's layer as nn::MultiheadAttention (float64, the lab's weights, its structure), and the
// forward options that give it the lab's padding.
std::shared_ptr<tg::nn::MultiheadAttention> lab_module(const Config& c, const Weights& w) {
  tg::nn::MultiheadAttentionOptions mo;
  mo.batch_first = true;
  mo.structure = c.structure;
  auto mha = std::make_shared<tg::nn::MultiheadAttention>(c.E, c.NH, mo);
  mha->to(tg::kFloat64);
  tg::nn::StateDict sd;
  sd.insert("in_proj_weight", w.w_in);
  sd.insert("in_proj_bias", w.b_in);
  sd.insert("out_proj.weight", w.w_out);
  sd.insert("out_proj.bias", w.b_out);
  mha->load_state_dict(sd);
  return mha;
}
tg::nn::MHAForwardOptions lab_options(const Config& c) {
  tg::nn::MHAForwardOptions f;
  f.need_weights = false;
  if (!c.lengths.empty()) {
    std::vector<bool> pad;
    for (int64_t b = 0; b < c.B; ++b)
      for (int64_t j = 0; j < c.T; ++j) pad.push_back(j >= c.lengths[size_t(b)]);
    f.key_padding_mask = tg::tensor(pad, {c.B, c.T});
  }
  return f;
}

// ---- second order ------------------------------------------------------------------------------
// Curvature per head: the Hessian-vector product of the lab's loss L = sum(out * G) with respect
// to in_proj_weight along each head's own gradient (its q, k and v rows of dL/dW_in, the rest 0,
// made a unit vector u_h): uᵀHu is L's curvature in that direction, |Hu| how strongly that step
// moves the whole gradient, and the part of Hu on other heads' rows how much the heads interact.
// tg::grad with create_graph gives dL/dW_in with a history; the gradient of ⟨dL/dW_in, u⟩ is Hu.
void print_head_curvature(const Config& c, const Weights& w, const Tensor& x) {
  const int64_t E = c.E, NH = c.NH, hs = E / NH;
  auto mha = lab_module(c, w);
  mha->in_proj_weight = mha->in_proj_weight.detach().clone().requires_grad_();
  tg::manual_seed(c.seed + 1);  // the walk-through's G
  const Tensor G = tg::randn({c.B, c.T, E}, tg::kFloat64);
  const Tensor loss = tg::sum(tg::mul(mha->forward(x, x, x, lab_options(c)).first, G));
  tg::GradOptions cg;
  cg.create_graph = true;
  const Tensor g = tg::grad({loss}, {mha->in_proj_weight}, {}, cg)[0];  // (3E, E), with a history
  const Tensor gd = g.detach();
  std::printf(
      "\nsecond order: Hessian-vector products of L = sum(out * G) w.r.t. in_proj_weight "
      "(3E, E),\nalong each head's own gradient u_h (its q, k, v rows of dL/dW_in, unit "
      "length):\n");
  std::printf("  head  |dL/dW_h|      u_h^T H u_h   |H u_h|     share of H u_h on other heads\n");
  for (int64_t h = 0; h < NH; ++h) {
    std::vector<double> rows(size_t(3 * E), 0.0);
    for (int64_t part = 0; part < 3; ++part)
      for (int64_t r = 0; r < hs; ++r) rows[size_t(part * E + h * hs + r)] = 1.0;
    const Tensor sel = tg::tensor(rows, {3 * E, 1});
    const Tensor u0 = tg::mul(gd, sel);
    const double n0 = norm(u0);
    if (!(n0 > 0)) {
      std::printf("  %4lld  %10.4g  (no gradient: nothing to measure)\n", (long long)h, n0);
      continue;
    }
    const Tensor u = tg::div(u0, n0);
    tg::GradOptions keep;
    keep.retain_graph = true;
    const Tensor hu = tg::grad({tg::sum(tg::mul(g, u))}, {mha->in_proj_weight}, {}, keep)[0];
    const double uhu = tg::sum(tg::mul(hu, u)).item<double>(), nhu = norm(hu);
    const double own = norm(tg::mul(hu, sel));
    const double other = nhu > 0 ? std::sqrt(std::max(0.0, nhu * nhu - own * own)) / nhu : 0.0;
    std::printf("  %4lld  %10.4g  %14.6g  %10.4g  %6.1f %%\n", (long long)h, n0, uhu, nhu,
                100 * other);
  }
}

// --sharpness: the top Hessian eigenvalue of a trained classifier's training loss, by power
// iteration, printed per iteration and plotted.
int run_sharpness(const ArgParser& p) {
  const std::string dir = p.str("sharpness"), out = p.str("out");
  const int64_t examples = int_option(p, "examples", 1, 4096);
  const int64_t iters = int_option(p, "iters", 1, 1000);
  std::printf(
      "sharpness of %s: power iteration on Hessian-vector products of the mean training "
      "loss\n",
      dir.c_str());
  const tgx::cls::Sharpness s = tgx::cls::sharpness(dir, examples, iters, p.str("data-dir"),
                                                    uint64_t(int_option(p, "seed", 0)));
  std::printf("  %lld training emails, %lld parameters, loss %.6f\n", (long long)s.examples,
              (long long)s.parameters, s.loss);
  std::printf("  iteration   v^T H v (Rayleigh quotient)   change\n");
  for (size_t k = 0; k < s.lambda.size(); ++k)
    std::printf("  %9zu   %26.6g   %s\n", k + 1, s.lambda[k],
                k == 0 ? ""
                       : fmt::format("{:.2e}", std::fabs(s.lambda[k] - s.lambda[k - 1]) /
                                                   std::max(1e-300, std::fabs(s.lambda[k])))
                             .c_str());
  std::printf("  top eigenvalue (sharpness) ~ %.6g after %lld products (%.1f s)\n", s.lambda.back(),
              (long long)iters, s.seconds);
  fs::create_directories(out);
  Series l{"v^T H v", {}, s.lambda, {31, 119, 180}};
  for (size_t k = 0; k < s.lambda.size(); ++k) l.x.push_back(double(k + 1));
  PlotOptions po;
  po.title = "sharpness: power iteration on Hessian-vector products";
  po.xlabel = "iteration";
  po.ylabel = "Rayleigh quotient v^T H v";
  write_png(out + "/sharpness.png", line_plot({l}, po));
  nlohmann::json j = {
      {"run", dir},          {"examples", s.examples}, {"parameters", s.parameters},
      {"loss", s.loss},      {"lambda", s.lambda},     {"sharpness", s.lambda.back()},
      {"seconds", s.seconds}};
  tg::write_file_atomic(out + "/sharpness.json", j.dump(2) + "\n");
  std::printf("wrote %s/sharpness.png and sharpness.json\n", out.c_str());
  return 0;
}

// The module computes the same layer: the lab's walk-through is the real thing.
double check_against_module(const Config& c, const Weights& w, const Tensor& x, const Run& r) {
  auto mha = lab_module(c, w);
  tg::NoGradGuard ng;
  Tensor ref = mha->forward(x, x, x, lab_options(c)).first;
  return tg::max(tg::abs(tg::sub(ref, r.out))).item<double>();
}

int64_t to_int(const std::string& s, const std::string& what) {
  if (auto v = parse_int(s)) return *v;
  throw UserError(what + ": '" + s + "' is not a whole number");
}

Config parse(const ArgParser& p) {
  Config c;
  c.B = int_option(p, "batch", 1, 64), c.T = int_option(p, "len", 1, 512),
  c.E = int_option(p, "embed", 1, 4096), c.NH = int_option(p, "heads", 1, 256);
  c.seed = uint64_t(int_option(p, "seed", 0));
  c.out = p.str("out");
  int structures = int(p.flag("causal")) + int(p.given("local")) + int(p.given("blocked"));
  if (structures > 1) throw UserError("choose at most one of --causal, --local, --blocked");
  if (p.flag("causal")) c.structure = tg::AttentionMask::causal();
  if (p.given("local")) {
    auto lr = split_list(p.str("local"), ',', "--local");
    if (lr.size() != 2) throw UserError("--local takes LEFT,RIGHT, e.g. --local 2,0");
    const int64_t left = to_int(lr[0], "--local"), right = to_int(lr[1], "--local");
    if (left < 0 || right < 0)
      throw UserError(fmt::format("--local {}: LEFT and RIGHT must be >= 0", p.str("local")));
    c.structure = tg::AttentionMask::local(left, right);
  }
  if (p.given("blocked"))
    c.structure = tg::AttentionMask::blocked(int_option(p, "blocked", 1, 512));
  if (p.given("tokens")) {
    std::string t = p.str("tokens");
    require_utf8(t, "--tokens");
    for (const auto& w : split_list(squeeze_spaces(t), ' ', "--tokens")) c.tokens.push_back(w);
  }
  return c;
}

}  // namespace

namespace {

// The command line's options.
void add_options(ArgParser& p) {
  p.option("checkpoint", "", "model.safetensors or checkpoint dir holding a MultiheadAttention")
      .option("layer", "",
              "the attention layer: its tensor name prefix in the checkpoint (e.g. "
              "encoder.layers.0.self_attn), or with --text the layer index (default 0)")
      .option("embed", "8", "E, embedding size (fresh layer)")
      .option("heads", "2", "NH, number of heads")
      .option("len", "6", "T, sequence length (ignored with --input)")
      .option("batch", "1", "B (ignored with --input)")
      .option("input", "", "NPY file with the input x, (T, E) or (B, T, E)")
      .option("text", "",
              "with --checkpoint <text_classification run dir> --layer N: the input that layer's "
              "attention receives for this text, tokens on the axes")
      .option("tokens", "", "space-separated labels for the positions (axes of the heatmaps)")
      .option("local", "", "LEFT,RIGHT: sliding window i-LEFT <= j <= i+RIGHT")
      .option("blocked", "", "W: attention within blocks of W positions")
      .option("padding", "", "valid key lengths per batch, e.g. 5,7 (keys j >= length are padding)")
      .option("seed", "0", "seed for the fresh layer, the input and the upstream gradient")
      .option("out", "runs/attention_lab", "output directory")
      .option("sharpness", "",
              "a text_classification run folder: the top Hessian eigenvalue of its training loss "
              "by power iteration (nothing else runs)")
      .option("examples", "64", "--sharpness: training emails in the loss")
      .option("iters", "20", "--sharpness: Hessian-vector products (power iterations)")
      .option("data-dir", "", "--sharpness: where the run's data set is (default: its usual place)")
      .flag("causal", "causal self-attention");
}

// The layer's weights (a checkpoint's or fresh) and its input x (a classifier's on --text, --input,
// or random), with the sizes in c they fix.
std::pair<Weights, Tensor> weights_and_input(const ArgParser& p, Config& c) {
  Weights w;
  Tensor x;
  if (p.given("text")) {
    if (!p.given("checkpoint") || p.given("input"))
      throw UserError("--text needs --checkpoint <text_classification run dir> (and no --input)");
    std::string layer = p.given("layer") ? p.str("layer") : "0";
    tgx::cls::AttentionInput a =
        tgx::cls::attention_input(p.str("checkpoint"), p.str("text"), to_int(layer, "--layer"));
    w = checkpoint_weights(p.str("checkpoint") + "/best", a.prefix);
    x = a.x.to(tg::kFloat64);
    c.E = w.w_out.size(0), c.NH = a.heads, c.B = 1, c.T = x.size(1);
    if (!p.given("tokens")) c.tokens = a.tokens;
  } else if (p.given("checkpoint")) {
    const std::string ck = p.str("checkpoint");
    if (file_exists(ck + "/best/model.safetensors") && file_exists(ck + "/tokenizer.json"))
      throw UserError(fmt::format(
          "--checkpoint {} is a text_classification run folder: give --text \"some text\" (and "
          "--layer N) to study one of its attention layers on that text",
          ck));
    w = checkpoint_weights(ck, p.str("layer"));
    c.E = w.w_out.size(0);
    if (!p.given("heads"))
      throw UserError(
          "--heads is required with --checkpoint (the file stores weights, not the head count)");
  } else if (p.given("layer")) {
    throw UserError("--layer needs --checkpoint");
  }
  if (c.E % c.NH != 0)
    throw UserError(fmt::format("embed {} is not divisible by heads {}", c.E, c.NH));
  if (!w.w_in.defined()) w = fresh_weights(c);

  if (!x.defined() && p.given("input")) {
    if (!file_exists(p.str("input")))
      throw UserError("--input " + p.str("input") + ": no such file");
    x = tg::load_npy(p.str("input")).to(tg::kFloat64);
    if (x.dim() == 2) x = x.unsqueeze(0);
    if (x.dim() != 3 || x.size(2) != c.E)
      throw UserError(fmt::format("--input: x is {}, expected (T, E) or (B, T, E) with E = {}",
                                  shape_str(x.shape()), c.E));
    c.B = x.size(0), c.T = x.size(1);
    if (!std::isfinite(tg::sum(tg::abs(x)).item<double>()))
      throw UserError(fmt::format("--input {}: x {} holds NaN or infinite values", p.str("input"),
                                  shape_str(x.shape())));
  } else if (!x.defined()) {
    tg::manual_seed(c.seed + 2);
    x = tg::randn({c.B, c.T, c.E}, tg::kFloat64);
  }
  if (!c.tokens.empty() && int64_t(c.tokens.size()) != c.T)
    throw UserError(
        fmt::format("--tokens gives {} labels for T = {} positions", c.tokens.size(), c.T));
  return {w, x};
}

// The structure, and --padding's key lengths (into c.lengths).
tg::AttentionMask lab_mask(const ArgParser& p, Config& c) {
  tg::AttentionMask mask = c.structure;
  if (p.given("padding")) {
    for (const auto& s : split_list(p.str("padding"), ',', "--padding"))
      c.lengths.push_back(to_int(s, "--padding"));
    if (int64_t(c.lengths.size()) != c.B)
      throw UserError(fmt::format("--padding gives {} lengths for B = {}", c.lengths.size(), c.B));
    for (int64_t l : c.lengths)
      if (l < 0 || l > c.T)
        throw UserError(fmt::format("--padding: length {} outside 0..T = {}", l, c.T));
    mask = mask & tg::AttentionMask::key_lengths(tg::tensor(c.lengths, {c.B}));
  }
  return mask;
}

// The run's own checks: P's rows sum to 1 and nn::MultiheadAttention agrees; 1 when it does not.
int report_checks(const Config& c, const Weights& w, const Tensor& x, const Run& r) {
  double max_row_err = 0;
  {
    Tensor rows = tg::sum(r.P, {-1});
    for (double s : rows.to_vector<double>())
      max_row_err = std::max(max_row_err, s == 0 ? 0.0 : std::fabs(s - 1));
  }
  double diff = check_against_module(c, w, x, r);
  std::printf(
      "\nchecks: P rows sum to 1 (max |sum - 1| = %.2e; fully masked rows are 0); "
      "nn::MultiheadAttention gives the same output (max |diff| = %.2e)\n",
      max_row_err, diff);
  std::printf("wrote %s/{S,P,dP,dS}_b<batch>_h<head>.png and {S,P,dP,dS,x,dx}.npy\n",
              c.out.c_str());
  if (!(diff < 1e-9)) {
    std::fprintf(stderr,
                 "attention_lab: error: the step-by-step layer and nn::MultiheadAttention differ "
                 "by %.3g (more than 1e-9)\n",
                 diff);
    return 1;
  }
  return 0;
}

}  // namespace

int run(const std::vector<std::string>& args) {
  if (wants_model_lab(args)) return run_model_lab(args);  // a Hugging Face model folder
  ArgParser p(
      "attention_lab",
      "Runs one multi-head self-attention layer step by step, forward and backward, and shows\n"
      "every intermediate: shapes, S, P, dP, dS per head (PNG + NPY), gradient per key.");
  add_options(p);
  std::vector<const char*> argv{"attention_lab"};
  for (const auto& a : args) argv.push_back(a.c_str());
  if (!p.parse(int(argv.size()), argv.data())) return 0;
  if (p.given("sharpness")) {
    for (const char* o : {"checkpoint", "layer", "input", "text", "tokens", "local", "blocked",
                          "padding", "causal", "embed", "heads", "len", "batch"})
      if (p.given(o))
        throw UserError(
            fmt::format("--{} does not go with --sharpness (it studies a whole "
                        "trained classifier)",
                        o));
    return run_sharpness(p);
  }
  for (const char* o : {"examples", "iters", "data-dir"})
    if (p.given(o)) throw UserError(fmt::format("--{} goes with --sharpness only", o));
  Config c = parse(p);

  auto [w, x] = weights_and_input(p, c);
  tg::AttentionMask mask = lab_mask(p, c);
  std::printf("attention lab: %s\n", w.source.c_str());
  if (c.T <= 16 && !mask.is_none()) std::printf("mask (batch 0):\n%s", mask.describe(c.T).c_str());
  Run r = run_layer(c, w, x, mask);
  print_walkthrough(c, r, mask);
  print_key_gradients(c, r);
  print_head_curvature(c, w, x);
  write_maps(c, r);
  return report_checks(c, w, x, r);
}

}  // namespace tgx::lab
