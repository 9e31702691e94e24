// tools/gradcheck/options.cpp — parsing the case options ("--op mha --len 7 --local 2,0 ...") and
// the built-in --all table, which is written in the same options so one parser serves both.
// Deliberately not here: the builders (cases.cpp), the global options and output (main.cpp).
#include "tools/unary_samples.hpp"
#include "tools/gradcheck/cases.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace tgc {
namespace {

int64_t to_int(const std::string& opt, const std::string& s) {
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno != 0)
    throw UsageError(fmt::format("{} expects an integer, got '{}'", opt, s));
  return v;
}

double to_double(const std::string& opt, const std::string& s) {
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || errno != 0 || !std::isfinite(v))
    throw UsageError(fmt::format("{} expects a number, got '{}'", opt, s));
  return v;
}

std::vector<std::string> split_commas(const std::string& opt, const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  if (s.empty()) throw UsageError(fmt::format("{} expects a comma-separated list, got ''", opt));
  return out;
}

std::vector<int64_t> to_ints(const std::string& opt, const std::string& s) {
  std::vector<int64_t> v;
  for (const auto& p : split_commas(opt, s)) v.push_back(to_int(opt, p));
  return v;
}

tg::Shape to_shape(const std::string& opt, const std::string& s) {
  tg::Shape sh = to_ints(opt, s);
  for (int64_t d : sh)
    if (d < 1 || d > 4096)
      throw UsageError(fmt::format("{} {}: every size must be in 1..4096", opt, s));
  return sh;
}

int64_t to_size(const std::string& opt, const std::string& s, int64_t lo = 1) {
  int64_t v = to_int(opt, s);
  if (v < lo || v > 4096)
    throw UsageError(fmt::format("{} must be in {}..4096, got {}", opt, lo, v));
  return v;
}

// The options with a value that is not a size (--op and --name aside).
void set_value(CaseArgs& a, const std::string& o, const std::string& v) {
  if (o == "--shape")
    a.shape = to_shape(o, v);
  else if (o == "--shape2")
    a.shape2 = to_shape(o, v);
  else if (o == "--values") {
    a.values.clear();
    for (const auto& p : split_commas(o, v)) a.values.push_back(to_double(o, p));
  } else if (o == "--local") {
    std::vector<int64_t> lr = to_ints(o, v);
    if (lr.size() != 2 || lr[0] < 0 || lr[1] < 0)
      throw UsageError(fmt::format("--local expects LEFT,RIGHT (two sizes >= 0), got '{}'", v));
    a.local = std::make_pair(lr[0], lr[1]);
  } else if (o == "--padding" || o == "--mem-padding") {
    std::vector<int64_t>& p = o == "--padding" ? a.padding : a.mem_padding;
    p = to_ints(o, v);
    for (int64_t l : p)
      if (l < 0) throw UsageError(fmt::format("{} {}: lengths must be >= 0", o, v));
  } else if (o == "--dropout") {
    a.dropout = to_double(o, v);
    if (!(a.dropout >= 0 && a.dropout < 1))
      throw UsageError(fmt::format("--dropout must be in [0, 1), got {}", v));
  } else if (o == "--dims")
    a.dims = to_ints(o, v);
  else if (o == "--dim")
    a.dim = to_int(o, v);
  else if (o == "--reduction") {
    if (v != "mean" && v != "sum" && v != "none")
      throw UsageError(fmt::format("--reduction must be mean, sum or none, got '{}'", v));
    a.reduction = v;
  } else if (o == "--smoothing")
    a.smoothing = to_double(o, v);
  else if (o == "--ignore-index")
    a.ignore_index = to_int(o, v);
  else if (o == "--padding-idx")
    a.padding_idx = to_int(o, v);
  else if (o == "--reduce") {
    if (v != "sum" && v != "prod" && v != "mean" && v != "amax" && v != "amin")
      throw UsageError(fmt::format("--reduce must be sum, prod, mean, amax or amin, got '{}'", v));
    a.reduce = v;
  } else if (o == "--activation") {
    if (v != "relu" && v != "gelu")
      throw UsageError(fmt::format("--activation must be relu or gelu, got '{}'", v));
    a.activation = v;
  }
}

// The options whose value is a size (at least its lower bound, at most 4096); false for others.
bool set_size(CaseArgs& a, const std::string& o, const std::string& v) {
  struct Size {
    const char* option;
    int64_t CaseArgs::*field;
    int64_t lo;
  };
  static const Size sizes[] = {{"--batch", &CaseArgs::batch, 1},
                               {"--len", &CaseArgs::len, 1},
                               {"--src-len", &CaseArgs::src_len, 1},
                               {"--embed", &CaseArgs::embed, 1},
                               {"--heads", &CaseArgs::heads, 1},
                               {"--head-size", &CaseArgs::head_size, 1},
                               {"--ff", &CaseArgs::ff, 1},
                               {"--vocab", &CaseArgs::vocab, 1},
                               {"--blocked", &CaseArgs::blocked, 1},
                               {"--look-back", &CaseArgs::look_back, 0},
                               {"--correction", &CaseArgs::correction, 0}};
  for (const Size& z : sizes)
    if (o == z.option) {
      a.*z.field = to_size(o, v, z.lo);
      return true;
    }
  return false;
}

}  // namespace

bool parse_case_option(const std::vector<std::string>& tk, size_t& i, CaseArgs& a) {
  const std::string& o = tk[i];
  // Flags (no value).
  bool* flag = o == "--causal"           ? &a.causal
               : o == "--bottom-right"   ? &a.bottom_right
               : o == "--bool-mask"      ? &a.bool_mask
               : o == "--additive"       ? &a.additive
               : o == "--pad-bool"       ? &a.pad_bool
               : o == "--blocked-causal" ? &a.blocked_causal
               : o == "--keepdim"        ? &a.keepdim
               : o == "--no-bias"        ? &a.no_bias
               : o == "--norm-first"     ? &a.norm_first
               : o == "--exclude-self"   ? &a.exclude_self
                                         : nullptr;
  if (flag) {
    *flag = true;
    a.given.push_back(o.substr(2));
    return true;
  }
  static const char* with_value[] = {
      "--op",          "--name",       "--shape",       "--shape2",    "--values",
      "--batch",       "--len",        "--src-len",     "--embed",     "--heads",
      "--head-size",   "--ff",         "--vocab",       "--local",     "--blocked",
      "--look-back",   "--padding",    "--mem-padding", "--dropout",   "--dims",
      "--dim",         "--correction", "--reduction",   "--smoothing", "--ignore-index",
      "--padding-idx", "--activation", "--reduce"};
  bool known = false;
  for (const char* w : with_value) known = known || o == w;
  if (!known) return false;
  if (i + 1 >= tk.size()) throw UsageError(fmt::format("{} needs a value", o));
  const std::string& v = tk[++i];
  if (o == "--op") {
    a.op = v;
    return true;
  }
  if (o == "--name") {
    a.label = v;
    return true;
  }
  a.given.push_back(o.substr(2) + "=" + v);
  if (!set_size(a, o, v)) set_value(a, o, v);
  return true;
}

CaseArgs parse_case(const std::string& args) {
  std::istringstream in(args);
  std::vector<std::string> tk;
  for (std::string w; in >> w;) tk.push_back(w);
  CaseArgs a;
  for (size_t i = 0; i < tk.size(); ++i)
    if (!parse_case_option(tk, i, a)) throw UsageError(fmt::format("unknown option '{}'", tk[i]));
  return a;
}

std::string case_label(const CaseArgs& a) {
  if (!a.label.empty()) return a.label;
  std::string s = a.op;
  for (const auto& g : a.given) s += " " + g;
  return s;
}

namespace {
// The table with one case per line of the unary list (ops/kern/unary_list.inc) in front.
std::vector<TableCase> with_unary_list(std::vector<TableCase> rest) {
  std::vector<TableCase> t;
  for (const tgu::UnarySample& u : tgu::unary_samples())
    t.push_back({u.name, fmt::format("--op {} --shape 2,5", u.name)});
  t.insert(t.end(), rest.begin(), rest.end());
  return t;
}
}  // namespace

// Every op family of ops/ops.hpp, attention with every mask kind, the modules. Small shapes keep
// the whole table to a few seconds in Release.
const std::vector<TableCase>& all_cases() {
  static const std::vector<TableCase> t = with_unary_list({
      // elementwise, unary: the list's ops (tools/unary_samples.hpp, added below) and these
      {"clamp(-0.5, 0.5)", "--op clamp_narrow --shape 3,3"},
      {"softplus(beta 2, threshold 1.5)", "--op softplus_b2_t1.5 --shape 2,5"},
      {"leaky_relu(0.1)", "--op leaky_relu_0.1 --shape 2,5"},
      {"elu(0.7)", "--op elu_0.7 --shape 2,5"},
      {"selu", "--op selu --shape 2,5"},
      {"hardswish(3x)", "--op hardswish_3x --shape 2,5"},
      {"hardsigmoid(3x)", "--op hardsigmoid_3x --shape 2,5"},
      {"hardtanh(-0.5, 0.8)", "--op hardtanh_-0.5_0.8 --shape 2,5"},
      {"relu6", "--op relu6 --shape 2,5"},
      {"glu", "--op glu --shape 3,4"},
      {"rsub 2.5 - x", "--op rsub --shape 2,5"},
      {"rdiv -2 / x (positive x)", "--op rdiv --shape 2,5"},
      {"clamp_min(-0.3)", "--op clamp_min --shape 2,5"},
      {"clamp_max(0.4)", "--op clamp_max --shape 2,5"},
      // elementwise, binary with broadcasting
      {"add (2,3)+(3)", "--op add --shape 2,3 --shape2 3"},
      {"sub (2,1,3)-(4,1)", "--op sub --shape 2,1,3 --shape2 4,1"},
      {"mul (2,3)*(2,1)", "--op mul --shape 2,3 --shape2 2,1"},
      {"div (3,1)/(1,4)", "--op div --shape 3,1 --shape2 1,4"},
      {"pow tensor (2,3)^(3)", "--op pow_tensor --shape 2,3 --shape2 3"},
      {"maximum (2,3),(3)", "--op maximum --shape 2,3 --shape2 3"},
      {"minimum (2,3),(2,1)", "--op minimum --shape 2,3 --shape2 2,1"},
      {"fmod (2,3),(3)", "--op fmod --shape 2,3 --shape2 3"},
      {"remainder (2,3),(2,1)", "--op remainder --shape 2,3 --shape2 2,1"},
      {"copysign (2,3),(3)", "--op copysign --shape 2,3 --shape2 3"},
      {"logaddexp (2,3),(3)", "--op logaddexp --shape 2,3 --shape2 3"},
      {"lerp (2,3),(3) weight 0.3", "--op lerp --shape 2,3 --shape2 3"},
      // reductions
      {"sum all", "--op sum --shape 2,3,4"},
      {"sum dims 0,2 keepdim", "--op sum --shape 2,3,4 --dims 0,2 --keepdim"},
      {"mean dim -1", "--op mean --shape 3,4 --dims -1"},
      {"prod dim 1", "--op prod --shape 3,4 --dims 1"},
      {"cumprod dim 0", "--op cumprod --shape 3,4 --dims 0"},
      {"cumsum dim 1", "--op cumsum --shape 3,4 --dims 1"},
      {"cummax dim 1", "--op cummax --shape 3,4 --dims 1"},
      {"cummin dim 0", "--op cummin --shape 3,4 --dims 0"},
      {"logcumsumexp dim 1", "--op logcumsumexp --shape 3,4 --dims 1"},
      {"max dim 1", "--op max --shape 3,4 --dims 1"},
      {"min dim 1", "--op min --shape 3,4 --dims 1"},
      {"logsumexp dims 0,2", "--op logsumexp --shape 2,3,4 --dims 0,2"},
      {"std dim 1", "--op std --shape 3,4 --dims 1"},
      {"var dim 1 unbiased", "--op var --shape 3,4 --dims 1"},
      {"var all, correction 0", "--op var --shape 3,4 --correction 0"},
      {"std_mean dim 1", "--op std_mean --shape 3,4 --dims 1"},
      {"std_mean all, correction 0", "--op std_mean --shape 2,3 --correction 0"},
      // linear algebra
      {"matmul 2-D", "--op matmul --shape 2,3 --shape2 3,4"},
      {"matmul batch broadcast", "--op matmul --shape 2,1,2,3 --shape2 3,3,2"},
      {"matmul 1-D x 3-D", "--op matmul --shape 3 --shape2 2,3,2"},
      {"bmm", "--op bmm --shape 2,2,3 --shape2 2,3,4"},
      {"mm", "--op mm --shape 2,3 --shape2 3,4"},
      {"einsum (batched product, diagonal, ellipsis, implicit)", "--op einsum"},
      {"linear with bias", "--op linear --shape 2,3,4 --shape2 5,4"},
      {"linear no bias", "--op linear --shape 3,4 --shape2 2,4 --no-bias"},
      // shape
      {"reshape", "--op reshape --shape 2,3,4"},
      {"flatten", "--op flatten --shape 2,3,4"},
      {"transpose", "--op transpose --shape 2,3,4"},
      {"permute", "--op permute --shape 2,3,4"},
      {"squeeze / unsqueeze", "--op squeeze --shape 2,1,3"},
      {"expand", "--op expand --shape 3,1"},
      {"narrow", "--op narrow --shape 4,3"},
      {"slice step 2", "--op slice --shape 5,3"},
      {"index_select", "--op index_select --shape 4,3"},
      {"cat", "--op cat --shape 2,3 --shape2 1,3"},
      {"stack", "--op stack --shape 2,3"},
      {"split", "--op split --shape 5,2"},
      {"chunk", "--op chunk --shape 2,6 --dim 1"},
      {"rearrange", "--op rearrange --shape 2,3,4"},
      {"view", "--op view --shape 2,3,4"},
      {"t", "--op t --shape 3,4"},
      {"sum_to (unbroadcast)", "--op sum_to --shape 2,3,4"},
      {"select", "--op select --shape 3,4"},
      {"unflatten", "--op unflatten --shape 6,4"},
      {"meshgrid ij and xy", "--op meshgrid --shape 3 --shape2 4"},
      // diagonals, windows, triangles (diagonal.cpp, indexing.cpp)
      {"diagonal (three offsets and dim pairs)", "--op diagonal --shape 3,4,5"},
      {"diag (of a matrix, of a vector)", "--op diag --shape 4,5"},
      {"unfold (overlapping windows)", "--op unfold --shape 4,5"},
      {"tril", "--op tril --shape 4,5"},
      {"triu", "--op triu --shape 4,5"},
      // picking and placing by index (repeated targets), sorting
      {"gather", "--op gather --shape 3,4 --shape2 3,5"},
      {"scatter_add", "--op scatter_add --shape 3,4 --shape2 3,5"},
      {"scatter (last write wins)", "--op scatter --shape 3,4 --shape2 3,5"},
      {"scatter_reduce sum", "--op scatter_reduce --reduce sum"},
      {"scatter_reduce sum, exclude self", "--op scatter_reduce --reduce sum --exclude-self"},
      {"scatter_reduce prod", "--op scatter_reduce --reduce prod"},
      {"scatter_reduce prod, exclude self", "--op scatter_reduce --reduce prod --exclude-self"},
      {"scatter_reduce mean", "--op scatter_reduce --reduce mean"},
      {"scatter_reduce mean, exclude self", "--op scatter_reduce --reduce mean --exclude-self"},
      {"scatter_reduce amax", "--op scatter_reduce --reduce amax"},
      {"scatter_reduce amax, exclude self", "--op scatter_reduce --reduce amax --exclude-self"},
      {"scatter_reduce amin", "--op scatter_reduce --reduce amin"},
      {"scatter_reduce amin, exclude self", "--op scatter_reduce --reduce amin --exclude-self"},
      {"index (slices, rows, None, bool mask)", "--op index --shape 4,5"},
      {"topk (largest sorted, smallest unsorted)", "--op topk --shape 3,5"},
      {"sort (ascending, descending)", "--op sort --shape 3,5"},
      // in-place writes on a non-leaf (recorded; through views for zero_, fill_, copy_)
      {"add_", "--op add_ --shape 3,4"},
      {"sub_", "--op sub_ --shape 3,4"},
      {"mul_", "--op mul_ --shape 3,4"},
      {"div_", "--op div_ --shape 3,4"},
      {"clamp_", "--op clamp_ --shape 3,4"},
      {"zero_ (a row view)", "--op zero_ --shape 3,4"},
      {"fill_ (a column view)", "--op fill_ --shape 3,4"},
      {"copy_ (a row view)", "--op copy_ --shape 3,4"},
      {"masked_fill_", "--op masked_fill_ --shape 3,4"},
      {"index_put_ (bool mask, slice)", "--op index_put_ --shape 3,4"},
      {"scatter_ (src with a repeated target, then a value)", "--op scatter_ --shape 3,4"},
      {"index_put (accumulate, a repeated position)", "--op index_put --shape 3,4"},
      // neural-network functions
      {"softmax dim -1", "--op softmax --shape 3,4"},
      {"softmax dim 0", "--op softmax --shape 3,4 --dim 0"},
      {"log_softmax dim 1", "--op log_softmax --shape 2,4,3 --dim 1"},
      {"softmin dim 0", "--op softmin --shape 3,4 --dim 0"},
      {"masked_fill broadcast mask", "--op masked_fill --shape 3,4 --shape2 1,4"},
      {"where", "--op where --shape 3,4 --shape2 4"},
      {"layer_norm", "--op layer_norm --shape 2,5"},
      {"layer_norm no affine", "--op layer_norm --shape 3,4 --no-bias"},
      {"rms_norm", "--op rms_norm --shape 2,5"},
      {"apply_rotary (both layouts)", "--op apply_rotary --shape 2,3,6"},
      {"rms_norm no weight", "--op rms_norm --shape 3,4 --no-bias"},
      {"embedding weights", "--op embedding --shape 2,3 --vocab 5 --embed 3"},
      {"embedding padding_idx", "--op embedding --shape 2,4 --vocab 5 --embed 2 --padding-idx 1"},
      {"dropout p 0.3 (fixed seed)", "--op dropout --shape 4,5 --dropout 0.3"},
      {"cross_entropy mean", "--op cross_entropy --shape 4,5"},
      {"cross_entropy smoothing+ignore",
       "--op cross_entropy --shape 4,5 --smoothing 0.1 --ignore-index 2"},
      {"cross_entropy (N,C,d) none", "--op cross_entropy --shape 2,4,3 --reduction none"},
      {"mse_loss", "--op mse_loss --shape 3,4"},
      {"l1_loss", "--op l1_loss --shape 3,4"},
      {"smooth_l1_loss", "--op smooth_l1_loss --shape 3,4"},
      {"huber_loss", "--op huber_loss --shape 3,4"},
      {"binary_cross_entropy", "--op binary_cross_entropy --shape 3,4"},
      {"binary_cross_entropy_with_logits", "--op binary_cross_entropy_with_logits --shape 3,4"},
      {"kl_div", "--op kl_div --shape 3,4"},
      {"cosine_similarity", "--op cosine_similarity --shape 3,4"},
      {"nll_loss", "--op nll_loss --shape 3,4"},
      {"normalize", "--op normalize --shape 3,4"},
      {"flip", "--op flip --shape 3,4"},
      {"roll", "--op roll --shape 3,4"},
      {"repeat", "--op repeat --shape 3,4"},
      {"repeat_interleave", "--op repeat_interleave --shape 3,4"},
      {"pad", "--op pad --shape 3,4"},
      // attention: every mask kind
      {"sdpa no mask", "--op sdpa --len 4 --src-len 5"},
      {"sdpa causal", "--op sdpa --causal --len 5 --src-len 5"},
      {"sdpa causal bottom-right", "--op sdpa --causal --bottom-right --len 3 --src-len 5"},
      {"sdpa local(1,1)", "--op sdpa --local 1,1 --len 5"},
      {"sdpa local(2,0)", "--op sdpa --local 2,0 --len 6"},
      {"sdpa blocked(2)", "--op sdpa --blocked 2 --len 5"},
      {"sdpa blocked(2) causal look-back",
       "--op sdpa --blocked 2 --look-back 1 --blocked-causal --len 5"},
      {"sdpa key lengths", "--op sdpa --len 4 --src-len 5 --padding 3,5"},
      {"sdpa key padding bool", "--op sdpa --len 4 --src-len 5 --padding 2,4 --pad-bool"},
      {"sdpa explicit bool mask", "--op sdpa --len 4 --src-len 5 --bool-mask"},
      {"sdpa additive mask", "--op sdpa --len 4 --src-len 5 --additive"},
      {"sdpa local + padding, fully masked rows", "--op sdpa --local 1,0 --len 5 --padding 1,5"},
      {"sdpa dropout 0.2 (fixed seed)", "--op sdpa --len 4 --dropout 0.2"},
      {"sdpa packed qkv, causal", "--op sdpa_packed --causal --len 4"},
      {"sdpa packed kv, key lengths", "--op sdpa_kv_packed --len 3 --src-len 4 --padding 2,4"},
      {"attention", "--op attention --len 3 --src-len 4"},
      {"attention, bool mask", "--op attention --len 3 --src-len 4 --bool-mask"},
      {"additive attention causal", "--op additive_attention --len 3 --src-len 3 --causal"},
      // modules
      {"mha self, local(2,0) + padding",
       "--op mha --batch 2 --len 7 --embed 8 --heads 2 "
       "--local 2,0 --padding 5,7"},
      {"mha cross T != S", "--op mha --len 3 --src-len 4 --embed 4 --heads 2"},
      {"mha causal, bool mask", "--op mha --len 4 --embed 4 --heads 2 --causal --bool-mask"},
      {"encoder layer post-norm relu + padding",
       "--op encoder_layer --len 4 --embed 4 --heads 2 --ff 6 --padding 3,4"},
      {"encoder layer pre-norm gelu local(1,1)",
       "--op encoder_layer --len 4 --embed 4 --heads 2 --ff 6 --norm-first --activation gelu "
       "--local 1,1"},
      {"decoder layer causal + memory padding",
       "--op decoder_layer --len 3 --src-len 4 --embed 4 --heads 2 --ff 6 --causal "
       "--mem-padding 2,4"},
  });
  return t;
}

}  // namespace tgc
