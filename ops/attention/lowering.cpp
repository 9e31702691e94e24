// ops/attention/lowering.cpp — the one lowering of an AttentionMask for the kernels: its
// structure and data parts as kern::MaskDesc (ops/kern/kernel_codes.hpp), which both backends read;
// the CPU's plan (each row's structural key range through kern::key_range, the row tiles) and row
// mask built from that description; the CUDA kernels' bias tables (each diagonal's T5 bucket by
// AttentionMask::t5_bucket, so both backends pick the same buckets); and the position biases'
// gradients from the kernels' per-(b, h) sums. Deliberately not here: the mask's constructors and
// reference (mask.cpp), the kernels.
#include "ops/attention/internal.hpp"
#include "ops/core/detail.hpp"
#include "ops/ops.hpp"

#include <algorithm>
#include <limits>

namespace tg::detail {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
}  // namespace

MaskLowering mask_structure(const AttentionMask& m, int64_t T, int64_t S) {
  MaskLowering l;
  kern::MaskDesc& md = l.desc;
  md.shift = m.align() == CausalAlign::BottomRight ? S - T : 0;
  md.causal = m.has_causal();
  for (const AttentionMask::Local& lc : m.local_parts()) {  // ranges intersect: the tightest
    md.left = md.has_local ? std::min(md.left, lc.left) : lc.left;
    md.right = md.has_local ? std::min(md.right, lc.right) : lc.right;
    md.has_local = true;
  }
  for (const AttentionMask::Blocked& b : m.blocked_parts()) {
    if (md.n_blocked < kern::kMaxBlocked) {
      const int k = md.n_blocked++;
      md.block_W[k] = b.W;
      md.block_back[k] = b.opts.look_back;
      md.block_ahead[k] = b.opts.look_ahead;
      md.block_causal[k] = b.opts.causal;
    } else {
      l.more.insert(l.more.end(),
                    {b.W, b.opts.look_back, b.opts.look_ahead, b.opts.causal ? 1 : 0});
    }
  }
  md.n_more_blocked = static_cast<int>(l.more.size() / 4);
  md.more_blocked = l.more.empty() ? nullptr : l.more.data();
  return l;
}

MaskLowering mask_desc(const AttentionMask& m, int64_t B, int64_t NH, int64_t T, int64_t S) {
  MaskLowering l = mask_structure(m, T, S);
  kern::MaskDesc& md = l.desc;
  const Shape full{B, NH, T, S};
  if (m.padding_part().defined())
    md.key_allowed = static_cast<const bool*>(m.padding_part().data_ptr());
  if (m.lengths_part().defined())
    md.key_lengths = static_cast<const int64_t*>(m.lengths_part().data_ptr());
  if (m.bool_part().defined()) {
    md.allowed = static_cast<const bool*>(m.bool_part().data_ptr());
    const Shape st = broadcast_strides(m.bool_part().shape(), full);
    std::copy(st.begin(), st.end(), md.allowed_stride);
  }
  if (m.additive_part().defined()) {
    md.additive = m.additive_part().data_ptr();
    const Shape st = broadcast_strides(m.additive_part().shape(), full);
    std::copy(st.begin(), st.end(), md.additive_stride);
  }
  return l;
}

void append_bias_grads(std::vector<Tensor>& out, const AttentionMask& m, const Tensor& d_rel,
                       const Tensor& d_alibi) {
  if (d_rel.defined()) {
    const Tensor& tb = m.rel_table();
    out.push_back(sum_to(sum(d_rel, {0}), tb.shape()).to(tb.dtype()).to(tb.device()));
  }
  if (d_alibi.defined()) {
    const Tensor& sl = m.slopes();
    out.push_back(sum(d_alibi, {0}).to(sl.dtype()).to(sl.device()));
  }
}

// ---- the CPU's plan and row mask ----

cpu::AttentionPlan make_plan(const AttentionMask& m, int64_t T, int64_t S) {
  cpu::AttentionPlan p;
  p.lo.resize(T);
  p.hi.resize(T);
  const MaskLowering l = mask_structure(m, T, S);
  for (int64_t i = 0; i < T; ++i) kern::key_range(l.desc, i, S, p.lo[i], p.hi[i]);
  const int64_t tile = m.has_structure() ? cpu::kAttentionRowTile : cpu::kAttentionRowTileFull;
  for (int64_t r0 = 0; r0 < T; r0 += tile) {
    cpu::AttentionTile t{r0, std::min(T, r0 + tile), S, -1, p.per_bh};
    for (int64_t i = t.r0; i < t.r1; ++i)
      if (p.lo[i] <= p.hi[i]) {
        t.klo = std::min(t.klo, p.lo[i]);
        t.khi = std::max(t.khi, p.hi[i]);
      }
    if (t.khi < t.klo) t.klo = 0, t.khi = -1;  // every row of the tile is structurally empty
    p.per_bh += t.rows() * t.width();
    p.max_tile = std::max(p.max_tile, t.rows() * t.width());
    p.tiles.push_back(t);
  }
  p.first_spans_all = S > 0 && !p.tiles.empty() && p.tiles[0].klo == 0 && p.tiles[0].khi == S - 1;
  return p;
}

namespace {
// Padding and lengths together as 0 / -inf per (b, j) in dt: the row mask's fast case.
Tensor key_block(const cpu::AttentionRowMask& r, const kern::AttentionLayout& d, DType dt) {
  Tensor kb = Tensor::empty({d.B, d.S}, dt);
  dispatch_float(dt, "scaled_dot_product_attention", [&](auto tag) {
    using T = decltype(tag);
    T* p = kb.data<T>();
    for (int64_t b = 0; b < d.B; ++b)
      for (int64_t j = 0; j < d.S; ++j) {
        const bool ok =
            (!r.lengths || j < r.lengths[b]) && (!r.key_allowed || r.key_allowed[b * d.S + j]);
        p[b * d.S + j] = ok ? T(0) : static_cast<T>(-kInf);
      }
  });
  return kb;
}
}  // namespace

LoweredMask lower_mask(const AttentionMask& m, const kern::AttentionLayout& d, DType dt) {
  LoweredMask lm;
  cpu::AttentionRowMask& r = lm.rows;
  const MaskLowering l = mask_desc(m, d.B, d.NH, d.T, d.S);
  const kern::MaskDesc& md = l.desc;
  r.key_allowed = md.key_allowed;
  r.lengths = md.key_lengths;
  r.allowed = md.allowed;
  std::copy(md.allowed_stride, md.allowed_stride + 4, r.allowed_st);
  if (md.additive) {  // the kernels read it in float64
    lm.additive64 = m.additive_part().detach().to(kFloat64);
    r.additive = lm.additive64.data<double>();
    std::copy(md.additive_stride, md.additive_stride + 4, r.additive_st);
  }
  if (m.rel_table().defined()) {
    lm.rel64 = m.rel_table().detach().to(kCPU).to(kFloat64).contiguous();
    r.rel = lm.rel64.data<double>();
    r.rel_n = lm.rel64.size(1);
    r.rel_hs = lm.rel64.size(0) == 1 ? 0 : r.rel_n;
    r.rel_bidirectional = m.rel_bidirectional();
    r.rel_max_distance = m.rel_max_distance();
  }
  if (m.slopes().defined()) {
    lm.alibi64 = m.slopes().detach().to(kCPU).to(kFloat64).contiguous();
    r.alibi = lm.alibi64.data<double>();
  }
  r.shift = m.align() == CausalAlign::BottomRight ? d.S - d.T : 0;
  if ((r.key_allowed || r.lengths) && !r.allowed && !r.additive && !r.rel && !r.alibi) {
    lm.key_block = key_block(r, d, dt);
    r.key_block = lm.key_block.data_ptr();
  }
  return lm;
}

// ---- the CUDA kernels' bias tables ----

BiasTables bias_tables(const AttentionMask& m, const kern::AttentionLayout& d, Device dev,
                       kern::MaskDesc& desc) {
  BiasTables t;
  desc.diag_lo = -(d.T - 1 + desc.shift);
  if (m.rel_table().defined()) {
    t.rel = m.rel_table().detach().to(kFloat64).to(dev).contiguous();
    const int64_t n = t.rel.size(1);
    std::vector<int64_t> bucket(static_cast<size_t>(std::max<int64_t>(d.T + d.S - 1, 0)));
    for (size_t e = 0; e < bucket.size(); ++e)
      bucket[e] = AttentionMask::t5_bucket(desc.diag_lo + static_cast<int64_t>(e),
                                           m.rel_bidirectional(), n, m.rel_max_distance());
    t.bucket = tensor(bucket).to(dev);
    desc.rel = static_cast<const double*>(t.rel.data_ptr());
    desc.rel_bucket = static_cast<const int64_t*>(t.bucket.data_ptr());
    desc.rel_n = n;
    desc.rel_hs = t.rel.size(0) == 1 ? 0 : n;
  }
  if (m.slopes().defined()) {
    t.alibi = m.slopes().detach().to(kFloat64).to(dev).contiguous();
    desc.alibi = static_cast<const double*>(t.alibi.data_ptr());
  }
  return t;
}

}  // namespace tg::detail
