// ops/attention/mask.cpp — AttentionMask: named constructors for every outside convention,
// intersection, copies with one part changed, validation against (B, NH, T, S), the per-row
// structural key range, and the slow per-element reference (allowed, dense_allowed, keys_per_row,
// describe) that fast paths are tested against. No gradients here: masks are data. Deliberately
// not here: the lowering for the kernels (lowering.cpp).
#include "ops/attention/attention.hpp"
#include "ops/attention/internal.hpp"
#include "ops/core/detail.hpp"
#include "ops/ops.hpp"

#include <algorithm>
#include <cmath>

namespace tg {
using namespace detail;

namespace {
constexpr const char* kOp = "attention_mask";

// Offset of (b, h, i, j) in a tensor broadcastable to (B, NH, T, S) (right-aligned, size-1 dims
// broadcast).
int64_t bcast_offset(const Tensor& t, int64_t b, int64_t h, int64_t i, int64_t j) {
  const Shape& s = t.shape();
  const int64_t idx[4] = {b, h, i, j};
  int64_t off = 0, stride = 1;
  for (size_t k = 0; k < s.size(); ++k) {
    const size_t d = s.size() - 1 - k;  // dim of t
    const int64_t id = idx[3 - k];
    if (s[d] != 1) off += id * stride;
    stride *= s[d];
  }
  return off;
}

void check_broadcast_4d(const Tensor& t, const char* part, const char* op, int64_t B, int64_t NH,
                        int64_t T, int64_t S) {
  const Shape full{B, NH, T, S};
  bool ok = t.dim() <= 4;
  for (int64_t k = 0; ok && k < t.dim(); ++k) {
    int64_t d = t.size(t.dim() - 1 - k), want = full[3 - k];
    ok = d == 1 || d == want;
  }
  if (!ok)
    throw Error(fmt::format("{}: {} mask {} does not broadcast to (B, NH, T, S) = {}", op, part,
                            shape_str(t.shape()), shape_str(full)));
}

// a AND b with broadcasting (bool): where(a, b, false) on the device of either operand.
Tensor bool_and(const Tensor& a, const Tensor& b) {
  const Device d = a.device().is_cuda() ? a.device() : b.device();
  return where(a.to(d), b.to(d), zeros({}, kBool, d));
}

void check_nonneg(int64_t v, const char* what, const char* ctor) {
  if (v < 0)
    throw Error(
        fmt::format("{}: {} must be >= 0, got {} (negative sizes are rejected, never read "
                    "as 'unlimited')",
                    ctor, what, v));
}
}  // namespace

// ---- structural parts ----
AttentionMask AttentionMask::causal(CausalAlign align) {
  AttentionMask m;
  m.causal_ = true;
  m.align_ = align;
  return m;
}
AttentionMask AttentionMask::local(int64_t left, int64_t right, CausalAlign align) {
  check_nonneg(left, "left", "AttentionMask::local");
  check_nonneg(right, "right", "AttentionMask::local");
  AttentionMask m;
  m.local_.push_back({left, right});
  m.align_ = align;
  return m;
}
AttentionMask AttentionMask::sliding_window(int64_t keys, Window kind, CausalAlign align) {
  const char* k = kind == Window::Causal ? "causal" : "centered";
  if (keys < 1)
    throw Error(fmt::format(
        "AttentionMask::sliding_window: keys must be >= 1 (the keys of an interior row, the "
        "query's own included), got {} ({})",
        keys, k));
  if (kind == Window::Causal) return local(keys - 1, 0, align);
  if (keys % 2 == 0)
    throw Error(fmt::format(
        "AttentionMask::sliding_window: a centered window has an odd number of keys (the query "
        "and as many on each side), got {}",
        keys));
  return local((keys - 1) / 2, (keys - 1) / 2, align);
}
AttentionMask AttentionMask::longformer(int64_t w) {
  check_nonneg(w, "w", "AttentionMask::longformer");
  if (w % 2 != 0)
    throw Error(
        fmt::format("AttentionMask::longformer: w must be even (|i - j| <= w/2), got {}", w));
  return sliding_window(w + 1, Window::Centered);
}
AttentionMask AttentionMask::mistral(int64_t W) {
  check_nonneg(W, "W", "AttentionMask::mistral");
  return sliding_window(W + 1);
}
AttentionMask AttentionMask::hf_sliding_window(int64_t W) {
  if (W < 1)
    throw Error(fmt::format(
        "AttentionMask::hf_sliding_window: W must be >= 1 (i - W < j <= i), got {}", W));
  return sliding_window(W);
}
AttentionMask AttentionMask::blocked(int64_t W, BlockedOptions opts, CausalAlign align) {
  if (W < 1)
    throw Error(fmt::format("AttentionMask::blocked: block size W must be >= 1, got {}", W));
  check_nonneg(opts.look_back, "look_back", "AttentionMask::blocked");
  check_nonneg(opts.look_ahead, "look_ahead", "AttentionMask::blocked");
  AttentionMask m;
  m.blocked_.push_back({W, opts});
  m.align_ = align;
  return m;
}

// ---- data parts ----
AttentionMask AttentionMask::key_padding(const Tensor& mask, MaskPolarity polarity) {
  check_dtype(mask, kBool, "AttentionMask::key_padding", "mask", true);
  if (mask.dim() != 2)
    throw Error(fmt::format("AttentionMask::key_padding: mask must be (B, S), got {}",
                            shape_str(mask.shape())));
  AttentionMask m;
  m.key_allowed_ = polarity == MaskPolarity::TrueAllowed ? mask.clone() : logical_not(mask);
  return m;
}
AttentionMask AttentionMask::key_lengths(const Tensor& lengths) {
  check_dtype(lengths, kInt64, "AttentionMask::key_lengths", "lengths", true);
  if (lengths.dim() != 1)
    throw Error(fmt::format("AttentionMask::key_lengths: lengths must be (B), got {}",
                            shape_str(lengths.shape())));
  const Tensor host = lengths.device().is_cuda() ? lengths.cpu() : dense(lengths);
  for (int64_t b = 0; b < host.numel(); ++b)
    if (host.data<int64_t>()[b] < 0)
      throw Error(fmt::format("AttentionMask::key_lengths: lengths[{}] = {} is negative", b,
                              host.data<int64_t>()[b]));
  AttentionMask m;
  m.key_lengths_ = lengths.clone();
  return m;
}
AttentionMask AttentionMask::from_bool(const Tensor& mask, MaskPolarity polarity) {
  check_defined(mask, "AttentionMask::from_bool", "mask");
  if (mask.dtype() != kBool)
    throw Error(
        fmt::format("AttentionMask::from_bool: mask {} has dtype {}; a bool mask is needed "
                    "(use AttentionMask::additive for float masks, from_seed for 0/1 masks)",
                    shape_str(mask.shape()), dtype_name(mask.dtype())));
  if (mask.dim() < 2 || mask.dim() > 4)
    throw Error(
        fmt::format("AttentionMask::from_bool: mask must be (T, S) up to (B, NH, T, S), got {}",
                    shape_str(mask.shape())));
  AttentionMask m;
  m.allowed_ = polarity == MaskPolarity::TrueAllowed ? mask.clone() : logical_not(mask);
  return m;
}
AttentionMask AttentionMask::from_seed(const Tensor& mask) {
  check_defined(mask, "AttentionMask::from_seed", "mask");
  Tensor nz = mask.dtype() == kBool ? mask : ne(mask, zeros({}, mask.dtype(), mask.device()));
  return from_bool(nz, MaskPolarity::TrueAllowed);
}
AttentionMask AttentionMask::additive(const Tensor& mask) {
  check_float(mask, "AttentionMask::additive", "mask", true);
  if (mask.dim() < 2 || mask.dim() > 4)
    throw Error(
        fmt::format("AttentionMask::additive: mask must be (T, S) up to (B, NH, T, S), got {}",
                    shape_str(mask.shape())));
  AttentionMask m;
  // A copy (later writes to the caller's tensor do not change the mask) that keeps the graph: a
  // mask that requires grad gets dScores summed to its shape, as PyTorch's attn_mask does.
  m.additive_ = mask.requires_grad() ? mask.clone() : mask.detach().clone();
  return m;
}

AttentionMask AttentionMask::relative_bias(const Tensor& table, bool bidirectional,
                                           int64_t max_distance) {
  constexpr const char* op = "AttentionMask::relative_bias";
  check_float(table, op, "table", true);
  if (table.dim() != 2 || table.size(1) < 2)
    throw Error(
        fmt::format("{}: table {} must be (NH or 1, buckets >= 2)", op, shape_str(table.shape())));
  if (max_distance < 2)
    throw Error(fmt::format("{}: max_distance {} must be >= 2 (table {})", op, max_distance,
                            shape_str(table.shape())));
  AttentionMask m;
  m.rel_table_ = table;  // the caller's (learned) parameter: its gradient arrives there
  m.rel_bidirectional_ = bidirectional;
  m.rel_max_distance_ = max_distance;
  return m;
}
AttentionMask AttentionMask::alibi(const Tensor& slopes) {
  constexpr const char* op = "AttentionMask::alibi";
  check_float(slopes, op, "slopes", true);
  if (slopes.dim() != 1)
    throw Error(fmt::format("{}: slopes {} must be (NH)", op, shape_str(slopes.shape())));
  AttentionMask m;
  m.alibi_slopes_ = slopes;
  return m;
}
// alibi_slopes' head limit: far above any model's head count, and small enough that a wrong
// argument (a size, a position) is refused instead of filling memory.
constexpr int64_t kMaxAlibiHeads = int64_t{1} << 16;
Tensor AttentionMask::alibi_slopes(int64_t NH, DType dtype) {
  constexpr const char* op = "AttentionMask::alibi_slopes";
  if (NH < 1 || NH > kMaxAlibiHeads)
    throw Error(fmt::format("{}: num_heads {} must be in [1, 2^16 = {}]", op, NH, kMaxAlibiHeads));
  if (!is_floating(dtype))
    throw Error(fmt::format(
        "{}: dtype {} must be floating (float32 or float64): the slopes 2^(-8k/num_heads) are "
        "fractions",
        op, dtype_name(dtype)));
  // the paper's reference code: the closest power of two p <= NH gives 2^(-8k/p); the rest are
  // every other slope of 2p
  auto pow2 = [](int64_t n) {
    std::vector<double> v;
    const double start = std::pow(2.0, -std::pow(2.0, -(std::log2(double(n)) - 3)));
    for (int64_t k = 0; k < n; ++k) v.push_back(start * std::pow(start, double(k)));
    return v;
  };
  int64_t p = 1;
  while (p * 2 <= NH) p *= 2;
  std::vector<double> v = pow2(p);
  if (p < NH) {
    const std::vector<double> extra = pow2(2 * p);
    for (int64_t k = 0; static_cast<int64_t>(v.size()) < NH; k += 2) v.push_back(extra[k]);
  }
  return tensor(v, {NH}).to(dtype);
}

int64_t AttentionMask::t5_bucket(int64_t rel, bool bidirectional, int64_t n, int64_t max_distance) {
  int64_t bucket = 0;
  if (bidirectional) {
    n /= 2;
    if (rel > 0) bucket += n;
    rel = rel < 0 ? -rel : rel;
  } else {
    rel = rel < 0 ? -rel : 0;
  }
  const int64_t max_exact = n / 2;
  if (rel < max_exact) return bucket + rel;
  // float32, as HF's relative_position.float() / max_exact
  const float large = std::log(static_cast<float>(rel) / static_cast<float>(max_exact)) /
                      static_cast<float>(std::log(double(max_distance) / double(max_exact))) *
                      static_cast<float>(n - max_exact);
  const int64_t b = std::min<int64_t>(max_exact + static_cast<int64_t>(large), n - 1);
  return bucket + b;
}

Tensor AttentionMask::dense_bias(int64_t NH, int64_t T, int64_t S) const {
  if (!rel_table_.defined() && !alibi_slopes_.defined()) return Tensor();
  const int64_t shift = align_ == CausalAlign::BottomRight ? S - T : 0;
  Tensor bias;
  const Device dev = rel_table_.defined() ? rel_table_.device() : alibi_slopes_.device();
  if (rel_table_.defined()) {
    std::vector<int64_t> idx(static_cast<size_t>(T * S));
    for (int64_t i = 0; i < T; ++i)
      for (int64_t j = 0; j < S; ++j)
        idx[static_cast<size_t>(i * S + j)] =
            t5_bucket(j - (i + shift), rel_bidirectional_, rel_table_.size(1), rel_max_distance_);
    bias = reshape(index_select(rel_table_, 1, tensor(idx, {T * S}).to(dev)),
                   {rel_table_.size(0), T, S});
  }
  if (alibi_slopes_.defined()) {
    std::vector<double> dist(static_cast<size_t>(T * S));
    for (int64_t i = 0; i < T; ++i)
      for (int64_t j = 0; j < S; ++j)
        dist[static_cast<size_t>(i * S + j)] = -std::abs(static_cast<double>(i + shift - j));
    const Tensor d = tensor(dist, {1, T, S}).to(alibi_slopes_.dtype()).to(dev);
    const Tensor a = mul(reshape(alibi_slopes_, {alibi_slopes_.numel(), 1, 1}), d);
    bias = bias.defined() ? add(bias, a) : a;
  }
  (void)NH;
  return bias;
}

AttentionMask AttentionMask::operator&(const AttentionMask& o) const {
  AttentionMask m = *this;
  if (has_structure() && o.has_structure() && align_ != o.align_)
    throw Error(fmt::format("{}: cannot combine '{}' and '{}': their causal alignments differ", kOp,
                            name(), o.name()));
  if (o.has_structure()) m.align_ = o.align_;
  m.causal_ = causal_ || o.causal_;
  m.local_.insert(m.local_.end(), o.local_.begin(), o.local_.end());
  m.blocked_.insert(m.blocked_.end(), o.blocked_.begin(), o.blocked_.end());
  if (o.key_allowed_.defined()) {
    if (m.key_allowed_.defined() && m.key_allowed_.shape() != o.key_allowed_.shape())
      throw Error(fmt::format("{}: key padding masks {} and {} differ in shape", kOp,
                              shape_str(m.key_allowed_.shape()),
                              shape_str(o.key_allowed_.shape())));
    m.key_allowed_ =
        m.key_allowed_.defined() ? bool_and(m.key_allowed_, o.key_allowed_) : o.key_allowed_;
  }
  if (o.key_lengths_.defined()) {
    if (m.key_lengths_.defined()) {
      if (m.key_lengths_.shape() != o.key_lengths_.shape())
        throw Error(fmt::format("{}: key lengths {} and {} differ in shape", kOp,
                                shape_str(m.key_lengths_.shape()),
                                shape_str(o.key_lengths_.shape())));
      m.key_lengths_ = minimum(m.key_lengths_.to(kFloat64), o.key_lengths_.to(kFloat64)).to(kInt64);
    } else {
      m.key_lengths_ = o.key_lengths_;
    }
  }
  if (o.allowed_.defined())
    m.allowed_ = m.allowed_.defined() ? bool_and(m.allowed_, o.allowed_) : o.allowed_;
  if (o.additive_.defined()) {
    if (m.additive_.defined()) {
      check_same_dtype(m.additive_, o.additive_, kOp, "additive mask", "other additive mask");
      m.additive_ = add(m.additive_, o.additive_);
    } else {
      m.additive_ = o.additive_;
    }
  }
  if (o.rel_table_.defined()) {
    if (m.rel_table_.defined())
      throw Error(
          fmt::format("{}: '{}' and '{}' both hold a relative-position bias; add the "
                      "tables instead",
                      kOp, name(), o.name()));
    m.rel_table_ = o.rel_table_;
    m.rel_bidirectional_ = o.rel_bidirectional_;
    m.rel_max_distance_ = o.rel_max_distance_;
  }
  if (o.alibi_slopes_.defined()) {
    if (m.alibi_slopes_.defined())
      throw Error(fmt::format("{}: '{}' and '{}' both hold ALiBi slopes", kOp, name(), o.name()));
    m.alibi_slopes_ = o.alibi_slopes_;
  }
  m.error_on_empty_ = error_on_empty_ || o.error_on_empty_;
  return m;
}
AttentionMask& AttentionMask::error_on_fully_masked(bool on) {
  error_on_empty_ = on;
  return *this;
}

// ---- copies with one thing changed ----
AttentionMask AttentionMask::aligned(CausalAlign a) const {
  AttentionMask m = *this;
  m.align_ = a;
  return m;
}
AttentionMask AttentionMask::on(Device d) const {
  auto moved = [d](const Tensor& t) { return t.defined() ? t.detach().to(d) : t; };
  AttentionMask m = *this;
  m.key_allowed_ = moved(m.key_allowed_);
  m.key_lengths_ = moved(m.key_lengths_);
  m.allowed_ = moved(m.allowed_);
  m.additive_ = moved(m.additive_);
  return m;
}
AttentionMask AttentionMask::with_additive(const Tensor& t) const {
  AttentionMask m = *this;
  m.additive_ = t;
  return m;
}
AttentionMask AttentionMask::with_rel_table(const Tensor& t) const {
  AttentionMask m = *this;
  m.rel_table_ = t;
  return m;
}
AttentionMask AttentionMask::with_slopes(const Tensor& t) const {
  AttentionMask m = *this;
  m.alibi_slopes_ = t;
  return m;
}

// ---- queries ----
bool AttentionMask::has_structure() const {
  return causal_ || !local_.empty() || !blocked_.empty();
}
bool AttentionMask::has_data() const {
  return key_allowed_.defined() || key_lengths_.defined() || allowed_.defined() ||
         additive_.defined() || rel_table_.defined() || alibi_slopes_.defined();
}
bool AttentionMask::is_none() const { return !has_structure() && !has_data(); }

std::pair<int64_t, int64_t> AttentionMask::key_range(int64_t i, int64_t T, int64_t S) const {
  const MaskLowering l = mask_structure(*this, T, S);
  int64_t lo, hi;
  kern::key_range(l.desc, i, S, lo, hi);
  return {lo, hi};
}

void AttentionMask::check(const char* op, int64_t B, int64_t NH, int64_t T, int64_t S) const {
  if (key_allowed_.defined() && key_allowed_.shape() != Shape{B, S})
    throw Error(fmt::format("{}: key_padding_mask {} must be (B, S) = ({}, {})", op,
                            shape_str(key_allowed_.shape()), B, S));
  if (key_lengths_.defined()) {
    if (key_lengths_.shape() != Shape{B})
      throw Error(fmt::format("{}: key lengths {} must be (B) = ({})", op,
                              shape_str(key_lengths_.shape()), B));
    for (int64_t b = 0; b < B; ++b)
      if (key_lengths_.data<int64_t>()[b] > S)
        throw Error(fmt::format("{}: key length {} of batch {} exceeds S = {}", op,
                                key_lengths_.data<int64_t>()[b], b, S));
  }
  if (allowed_.defined()) check_broadcast_4d(allowed_, "bool", op, B, NH, T, S);
  if (additive_.defined()) check_broadcast_4d(additive_, "additive", op, B, NH, T, S);
  if (rel_table_.defined() && rel_table_.size(0) != NH && rel_table_.size(0) != 1)
    throw Error(
        fmt::format("{}: relative-position table {} must be (NH or 1, buckets) with NH = {}", op,
                    shape_str(rel_table_.shape()), NH));
  if (alibi_slopes_.defined() && alibi_slopes_.numel() != NH)
    throw Error(fmt::format("{}: ALiBi slopes {} must be (NH) = ({})", op,
                            shape_str(alibi_slopes_.shape()), NH));
}

bool AttentionMask::allowed(int64_t b, int64_t h, int64_t i, int64_t j, int64_t T,
                            int64_t S) const {
  auto [lo, hi] = key_range(i, T, S);
  if (j < lo || j > hi) return false;
  if (key_allowed_.defined() && !key_allowed_.data<bool>()[b * S + j]) return false;
  if (key_lengths_.defined() && j >= key_lengths_.data<int64_t>()[b]) return false;
  if (allowed_.defined() && !allowed_.data<bool>()[bcast_offset(allowed_, b, h, i, j)])
    return false;
  if (additive_.defined() && std::isinf(additive_at(b, h, i, j, T, S)) &&
      additive_at(b, h, i, j, T, S) < 0)
    return false;
  return true;
}

double AttentionMask::additive_at(int64_t b, int64_t h, int64_t i, int64_t j, int64_t T,
                                  int64_t S) const {
  if (!additive_.defined()) return 0;
  const int64_t off = bcast_offset(additive_, b, h, i, j);
  return additive_.dtype() == kFloat32 ? additive_.data<float>()[off]
                                       : additive_.data<double>()[off];
}

Tensor AttentionMask::dense_allowed(int64_t B, int64_t NH, int64_t T, int64_t S) const {
  check("dense_allowed", B, NH, T, S);
  Tensor out = Tensor::empty({B, NH, T, S}, kBool);
  bool* p = out.data<bool>();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < NH; ++h)
      for (int64_t i = 0; i < T; ++i)
        for (int64_t j = 0; j < S; ++j) *p++ = allowed(b, h, i, j, T, S);
  return out;
}

std::vector<int64_t> AttentionMask::keys_per_row(int64_t T, int64_t S, int64_t b, int64_t h) const {
  if (S < 0) S = T;
  std::vector<int64_t> n(T, 0);
  for (int64_t i = 0; i < T; ++i)
    for (int64_t j = 0; j < S; ++j) n[i] += allowed(b, h, i, j, T, S);
  return n;
}

std::string AttentionMask::describe(int64_t T, int64_t S) const {
  if (S < 0) S = T;
  std::string out = fmt::format("{} (T={}, S={}): row i, '#' = key j allowed\n", name(), T, S);
  for (int64_t i = 0; i < T; ++i) {
    int64_t n = 0;
    std::string row;
    for (int64_t j = 0; j < S; ++j) {
      bool a = allowed(0, 0, i, j, T, S);
      n += a;
      row += a ? '#' : '.';
    }
    out += fmt::format("{:>4} {} {:>4} keys\n", i, row, n);
  }
  return out;
}

std::string AttentionMask::name() const {
  std::vector<std::string> parts;
  const char* al = align_ == CausalAlign::BottomRight ? ", bottom-right" : "";
  if (causal_)
    parts.push_back(
        fmt::format("causal{}", align_ == CausalAlign::BottomRight ? "(bottom-right)" : ""));
  for (const Local& l : local_) parts.push_back(fmt::format("local({},{}{})", l.left, l.right, al));
  for (const Blocked& b : blocked_)
    parts.push_back(
        fmt::format("blocked(W={}{}{}{}{})", b.W,
                    b.opts.look_back ? fmt::format(", back {}", b.opts.look_back) : "",
                    b.opts.look_ahead ? fmt::format(", ahead {}", b.opts.look_ahead) : "",
                    b.opts.causal ? ", causal" : "", al));
  // Sizes are named (B=, S=) and lengths listed, so "key_lengths(B=1: 5)" cannot be read as
  // "every length is 1".
  if (key_allowed_.defined())
    parts.push_back(
        fmt::format("key_padding(B={}, S={})", key_allowed_.size(0), key_allowed_.size(1)));
  if (key_lengths_.defined()) {
    const Tensor l = key_lengths_.cpu();
    const int64_t B = l.numel();
    std::string vals;
    for (int64_t b = 0; b < std::min<int64_t>(B, 8); ++b)
      vals += fmt::format("{}{}", b ? "," : "", l.data<int64_t>()[b]);
    if (B > 8) vals += ",...";
    parts.push_back(fmt::format("key_lengths(B={}: {})", B, vals));
  }
  if (allowed_.defined()) parts.push_back(fmt::format("bool{}", shape_str(allowed_.shape())));
  if (additive_.defined()) parts.push_back(fmt::format("additive{}", shape_str(additive_.shape())));
  if (rel_table_.defined())
    parts.push_back(fmt::format("relative_bias{}{}", shape_str(rel_table_.shape()),
                                rel_bidirectional_ ? "" : " causal"));
  if (alibi_slopes_.defined())
    parts.push_back(fmt::format("alibi{}", shape_str(alibi_slopes_.shape())));
  if (parts.empty()) return "none";
  std::string s = parts[0];
  for (size_t k = 1; k < parts.size(); ++k) s += " & " + parts[k];
  return s;
}

}  // namespace tg
