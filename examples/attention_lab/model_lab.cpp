// examples/attention_lab/model_lab.cpp — S, P, dP, dS of one layer of a loaded model (see
// model_lab.hpp).
#include "attention_lab/model_lab.hpp"

#include "autograd/io.hpp"
#include "common/cli.hpp"
#include "common/png.hpp"
#include "nn/hf/gpt2.hpp"
#include "nn/hf/llama.hpp"
#include "nn/tokenizer/tokenizer.hpp"
#include "ops/attention/attention.hpp"
#include "ops/ops.hpp"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>

namespace tgx::lab {
namespace {

using tg::Tensor;
namespace fs = std::filesystem;

// What the probe records, and the probe (the attention's tape node keeps a pointer to it for
// the backward: it lives as long as the Maps).
struct Maps {
  Tensor S, P, dP, dS;     // (1, NH, T, T)
  double output_diff = 0;  // max |recomputed - model's| of the layer's output projection
  tg::AttentionProbe probe;
  Maps() {
    probe.on_forward = [this](const Tensor& s, const Tensor& p) { S = s.clone(), P = p.clone(); };
    probe.on_backward = [this](const Tensor& dp, const Tensor& ds) {
      dP = dp.clone(), dS = ds.clone();
    };
  }
  Maps(const Maps&) = delete;
  Maps& operator=(const Maps&) = delete;
};

struct Hooks {
  std::vector<std::pair<tg::nn::Module*, int>> ids;
  ~Hooks() {
    for (auto [m, id] : ids) m->remove_forward_hook(id);
  }
  void capture(tg::nn::Module& m, Tensor& into) {
    ids.push_back({&m, m.register_forward_output_hook(
                           [&into](tg::nn::Module&, const std::vector<Tensor>&, const Tensor& out) {
                             into = out;
                             return out;
                           })});
  }
  // The output projection's hook: recompute(input) replaces the model's output.
  void replace(tg::nn::Module& m, std::function<Tensor(const Tensor& out)> recompute) {
    ids.push_back({&m, m.register_forward_output_hook(
                           [recompute](tg::nn::Module&, const std::vector<Tensor>&,
                                       const Tensor& out) { return recompute(out); })});
  }
};

// The probed attention of q (B, T, NH, hs), k, v (B, T, NKV, hs), heads last -> (B, T, NH·hs).
Tensor probed(const Tensor& q, const Tensor& k, const Tensor& v, const tg::AttentionMask& mask,
              Maps& maps) {
  tg::SDPAOptions so;
  so.heads_last = true;
  so.enable_gqa = k.size(2) != q.size(2);
  so.training = false;
  so.probe = &maps.probe;
  const Tensor o = tg::scaled_dot_product_attention(q, k, v, mask, so).output;
  return tg::reshape(o, {q.size(0), q.size(1), q.size(2) * q.size(3)});
}

double max_diff(const Tensor& a, const Tensor& b) {
  return tg::max(tg::abs(tg::sub(a.detach(), b.detach()))).item<double>();
}

void hook_gpt2(tg::nn::hf::GPT2LMHeadModel& m, int64_t layer, Hooks& hooks, Tensor& qkv,
               Maps& maps) {
  auto& attn = *m.transformer->h->at<tg::nn::hf::GPT2Block>(static_cast<size_t>(layer))->attn;
  hooks.capture(*attn.c_attn, qkv);
  const int64_t C = attn.embed_dim, NH = attn.num_heads, hs = attn.head_dim;
  auto* proj = attn.c_proj.get();
  hooks.replace(*proj, [&, C, NH, hs, proj](const Tensor& out) {
    const int64_t B = qkv.size(0), T = qkv.size(1);
    auto part = [&](int64_t i) {
      return tg::reshape(tg::narrow(qkv, 2, i * C, C), {B, T, NH, hs});
    };
    const Tensor o = probed(part(0), part(1), part(2), tg::AttentionMask::causal(), maps);
    const Tensor mine = tg::add(tg::matmul(o, proj->weight), proj->bias);
    maps.output_diff = max_diff(mine, out);
    return mine;
  });
}

void hook_llama(tg::nn::hf::LlamaForCausalLM& m, int64_t layer, Hooks& hooks, Tensor* qkv,
                Maps& maps) {
  auto& attn =
      *m.model->layers->at<tg::nn::LlamaDecoderLayer>(static_cast<size_t>(layer))->self_attn;
  hooks.capture(*attn.q_proj, qkv[0]);
  hooks.capture(*attn.k_proj, qkv[1]);
  hooks.capture(*attn.v_proj, qkv[2]);
  auto* a = &attn;
  hooks.replace(*attn.o_proj, [a, qkv, &maps](const Tensor& out) {
    const int64_t B = qkv[0].size(0), T = qkv[0].size(1), hs = a->head_dim;
    const Tensor q = a->rotary_emb->forward(tg::reshape(qkv[0], {B, T, a->num_heads, hs}), 0, 1);
    const Tensor k = a->rotary_emb->forward(tg::reshape(qkv[1], {B, T, a->num_kv_heads, hs}), 0, 1);
    const Tensor v = tg::reshape(qkv[2], {B, T, a->num_kv_heads, hs});
    const Tensor o = probed(q, k, v, a->options.structure, maps);
    const Tensor mine = tg::linear(o, a->o_proj->weight, a->o_proj->bias);
    maps.output_diff = max_diff(mine, out);
    return mine;
  });
}

// One label per token: its text, control characters escaped, cut to 12 bytes.
std::vector<std::string> token_labels(const tg::nn::Tokenizer& tok,
                                      const std::vector<int64_t>& ids) {
  std::vector<std::string> out;
  for (int64_t id : ids) {
    std::string s;
    for (char ch : tok.decode({id}))
      s += ch == '\n' ? std::string("\\n") : ch == '\t' ? std::string("\\t") : std::string(1, ch);
    out.push_back(s.size() > 12 ? s.substr(0, 12) : s);
  }
  return out;
}

// heads -1: every head.
void write_head_maps(const std::string& out, const Maps& maps, int64_t layer,
                     const std::vector<int64_t>& heads, const std::vector<std::string>& labels) {
  fs::create_directories(out);
  struct Map {
    const char* name;
    const Tensor* t;
    bool symmetric;
  };
  const int64_t NH = maps.P.size(1), T = maps.P.size(2);
  for (Map m : {Map{"S", &maps.S, false}, Map{"P", &maps.P, false}, Map{"dP", &maps.dP, true},
                Map{"dS", &maps.dS, true}}) {
    tg::save_npy(fmt::format("{}/{}.npy", out, m.name), *m.t);  // (1, NH, T, T)
    const std::vector<double> all = m.t->to_vector<double>();
    for (int64_t h : heads) {
      std::vector<double> vals(all.begin() + h * T * T, all.begin() + (h + 1) * T * T);
      if (std::string(m.name) == "S")
        for (double& v : vals)
          if (std::isinf(v)) v = NAN;  // blocked: grey
      HeatmapOptions o;
      o.title = fmt::format("{}  layer {} head {} of {}  (rows: queries, columns: keys)", m.name,
                            layer, h, NH);
      o.row_labels = labels;
      o.col_labels = labels;
      o.symmetric = m.symmetric;
      write_png(fmt::format("{}/{}_l{}_h{}.png", out, m.name, layer, h),
                heatmap(vals, int(T), int(T), o));
    }
  }
}

// Per head: the mean entropy of P's rows (nats) and |dS| (Frobenius), the key most attended by
// the last query.
void print_heads(const Maps& maps, const std::vector<int64_t>& heads,
                 const std::vector<std::string>& labels) {
  const int64_t T = maps.P.size(2);
  const std::vector<double> P = maps.P.to_vector<double>(), dS = maps.dS.to_vector<double>();
  fmt::print("{:>5} {:>14} {:>12}  {}\n", "head", "entropy(P)", "|dS|", "last query attends");
  for (int64_t h : heads) {
    double ent = 0, ds2 = 0;
    for (int64_t i = 0; i < T; ++i)
      for (int64_t j = 0; j < T; ++j) {
        const double p = P[static_cast<size_t>((h * T + i) * T + j)];
        if (p > 0) ent -= p * std::log(p);
        const double d = dS[static_cast<size_t>((h * T + i) * T + j)];
        ds2 += d * d;
      }
    int64_t best = 0;
    for (int64_t j = 0; j < T; ++j)
      if (P[static_cast<size_t>((h * T + T - 1) * T + j)] >
          P[static_cast<size_t>((h * T + T - 1) * T + best)])
        best = j;
    fmt::print("{:>5} {:>14.4f} {:>12.4e}  \"{}\" ({:.3f})\n", h, ent / double(T), std::sqrt(ds2),
               labels[static_cast<size_t>(best)],
               P[static_cast<size_t>((h * T + T - 1) * T + best)]);
  }
}

}  // namespace

bool wants_model_lab(const std::vector<std::string>& args) {
  for (const std::string& a : args)
    if (a == "--model" || a.rfind("--model=", 0) == 0) return true;
  return false;
}

int run_model_lab(const std::vector<std::string>& args) {
  ArgParser p("attention_lab --model",
              "S, P, dP, dS per head of one layer of a Hugging Face model folder on a text, "
              "forward and backward (the next-token loss of the text), as PNG and NPY.");
  p.option("model", "", "the model folder (GPT-2 or Llama family, with its tokenizer)")
      .option("text", "The tape records every operation.", "the text (at least two tokens)")
      .option("layer", "0", "the layer studied")
      .option("head", "-1", "the head drawn (-1: every head)")
      .option("out", "runs/attention_lab_model", "where the PNG and NPY files go")
      .option("threads", "0", "CPU threads (0: OMP_NUM_THREADS or all cores)");
  std::vector<const char*> argv{"attention_lab"};
  for (const auto& a : args) argv.push_back(a.c_str());
  if (!p.parse(int(argv.size()), argv.data())) return 0;
  if (const int n = threads_option(p)) tg::set_num_threads(n);
  const std::string dir = p.str("model");
  const tg::nn::Tokenizer tok = tg::nn::Tokenizer::from_pretrained(dir);
  auto model = tg::nn::hf::from_pretrained(dir);
  model->eval();
  const std::vector<int64_t> ids = tok.encode(p.str("text"));
  const int64_t T = static_cast<int64_t>(ids.size());
  if (T < 2 || T > model->max_positions())
    throw UserError(fmt::format("--text: {} tokens; the lab needs 2 to {} (the model's positions)",
                                T, model->max_positions()));
  const int64_t layer = int_option(p, "layer", 0, model->num_layers() - 1);
  Maps maps;
  Hooks hooks;
  Tensor qkv[3];
  auto* gpt2 = dynamic_cast<tg::nn::hf::GPT2LMHeadModel*>(model.get());
  if (gpt2)
    hook_gpt2(*gpt2, layer, hooks, qkv[0], maps);
  else
    hook_llama(dynamic_cast<tg::nn::hf::LlamaForCausalLM&>(*model), layer, hooks, qkv, maps);
  const Tensor logits = model->forward(tg::tensor(ids, {1, T}));  // (1, T, V)
  const int64_t V = logits.size(2);
  const Tensor loss =
      tg::cross_entropy(tg::reshape(tg::narrow(logits, 1, 0, T - 1), {T - 1, V}),
                        tg::tensor(std::vector<int64_t>(ids.begin() + 1, ids.end())));
  loss.backward();
  const int64_t NH = maps.P.size(1);
  const int64_t head = int_option(p, "head", -1, NH - 1, "-1: every head");
  std::vector<int64_t> heads;
  for (int64_t h = 0; h < NH; ++h)
    if (head < 0 || h == head) heads.push_back(h);
  const std::vector<std::string> labels = token_labels(tok, ids);
  fmt::print("attention lab: {} ({}), layer {} of {}, {} heads, {} tokens: {}\n", dir,
             gpt2 ? "gpt2" : "llama", layer, model->num_layers(), NH, T, fmt::join(labels, " | "));
  fmt::print("next-token loss of the text {:.4f} nats; S, P, dP, dS (1, {}, {}, {})\n",
             loss.item<double>(), NH, T, T);
  fmt::print("the probed recomputation of the layer gives the model's output to {:.3e}\n",
             maps.output_diff);
  print_heads(maps, heads, labels);
  write_head_maps(p.str("out"), maps, layer, heads, labels);
  fmt::print("wrote {}/{{S,P,dP,dS}}.npy and {} PNG heatmaps\n", p.str("out"), 4 * heads.size());
  return 0;
}

}  // namespace tgx::lab
