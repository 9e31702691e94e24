// tests/ops/test_attention_mask.cpp — AttentionMask: keys per row for every variant and edge
// (window 0, window >= T, blocks not dividing T, T != S, both causal alignments), the named
// conventions (Longformer, Mistral, Hugging Face, PyTorch MHA / SDPA polarity, the seed's 0/1
// mask), intersection, describe(), and errors.
#include "helpers.hpp"

#include "ops/attention/attention.hpp"

using namespace tg;
using V = std::vector<int64_t>;

TEST_CASE("causal masks: top-left and bottom-right alignment", "[attention_mask]") {
  REQUIRE(AttentionMask().keys_per_row(3) == V{3, 3, 3});
  REQUIRE(AttentionMask::causal().keys_per_row(4) == V{1, 2, 3, 4});
  // T != S: PyTorch's is_causal is top-left (j <= i) ...
  REQUIRE(AttentionMask::causal().keys_per_row(2, 4) == V{1, 2});
  REQUIRE(AttentionMask::causal().keys_per_row(4, 2) == V{1, 2, 2, 2});
  // ... FlashAttention's bottom-right shifts by S - T (j <= i + S - T).
  REQUIRE(AttentionMask::causal(CausalAlign::BottomRight).keys_per_row(2, 4) == V{3, 4});
  REQUIRE(AttentionMask::causal(CausalAlign::BottomRight).keys_per_row(4, 2) == V{0, 0, 1, 2});
}

TEST_CASE("local windows: inclusive (left, right) offsets and their edges", "[attention_mask]") {
  REQUIRE(AttentionMask::local(1, 1).keys_per_row(5) == V{2, 3, 3, 3, 2});
  REQUIRE(AttentionMask::local(2, 0).keys_per_row(5) == V{1, 2, 3, 3, 3});  // causal local
  REQUIRE(AttentionMask::local(0, 0).keys_per_row(4) == V{1, 1, 1, 1});     // self only
  REQUIRE(AttentionMask::local(0, 2).keys_per_row(4) == V{3, 3, 2, 1});
  // A window >= T is full (or causal) attention exactly.
  REQUIRE(AttentionMask::local(10, 10).keys_per_row(4) == V{4, 4, 4, 4});
  REQUIRE(AttentionMask::local(10, 0).keys_per_row(4) == AttentionMask::causal().keys_per_row(4));
  // T != S, top-left and bottom-right.
  REQUIRE(AttentionMask::local(1, 1).keys_per_row(2, 5) == V{2, 3});
  REQUIRE(AttentionMask::local(1, 1, CausalAlign::BottomRight).keys_per_row(2, 5) == V{3, 2});
  // The exact pattern, not just the counts.
  AttentionMask m = AttentionMask::local(1, 0);
  REQUIRE(m.allowed(0, 0, 3, 2, 5, 5));
  REQUIRE(m.allowed(0, 0, 3, 3, 5, 5));
  REQUIRE_FALSE(m.allowed(0, 0, 3, 1, 5, 5));
  REQUIRE_FALSE(m.allowed(0, 0, 3, 4, 5, 5));
  REQUIRE(m.key_range(3, 5, 5) == std::pair<int64_t, int64_t>{2, 3});
}

TEST_CASE("outside conventions convert to (left, right) with documented keys per row",
          "[attention_mask]") {
  // Longformer / seed LocalMultiheadAttention(window_size = 4): |i - j| <= 2, 5 keys inside.
  REQUIRE(AttentionMask::longformer(4).keys_per_row(7) == V{3, 4, 5, 5, 5, 4, 3});
  // Mistral W = 2: i - 2 <= j <= i, 3 keys inside.
  REQUIRE(AttentionMask::mistral(2).keys_per_row(5) == V{1, 2, 3, 3, 3});
  // Hugging Face sliding_window = 2: i - 2 < j <= i, 2 keys inside.
  REQUIRE(AttentionMask::hf_sliding_window(2).keys_per_row(5) == V{1, 2, 2, 2, 2});
  REQUIRE(AttentionMask::hf_sliding_window(1).keys_per_row(3) == V{1, 1, 1});
  REQUIRE_ERROR(AttentionMask::longformer(3), "AttentionMask::longformer: w must be even");
  REQUIRE_ERROR(AttentionMask::hf_sliding_window(0), "W must be >= 1");
  REQUIRE_ERROR(AttentionMask::local(-1, 0), "AttentionMask::local: left must be >= 0, got -1");
  REQUIRE_ERROR(AttentionMask::mistral(-2), "W must be >= 0");
}

TEST_CASE("sliding_window: one family counted in keys, the other names map onto it",
          "[attention_mask]") {
  using W = AttentionMask::Window;
  auto same = [](const AttentionMask& a, const AttentionMask& b) {
    for (int64_t i = 0; i < 9; ++i)
      if (a.key_range(i, 9, 9) != b.key_range(i, 9, 9)) return false;
    return a.name() == b.name();
  };
  REQUIRE(AttentionMask::sliding_window(3).keys_per_row(5) == V{1, 2, 3, 3, 3});
  REQUIRE(AttentionMask::sliding_window(3, W::Centered).keys_per_row(5) == V{2, 3, 3, 3, 2});
  REQUIRE(same(AttentionMask::longformer(4), AttentionMask::sliding_window(5, W::Centered)));
  REQUIRE(same(AttentionMask::mistral(2), AttentionMask::sliding_window(3)));
  REQUIRE(same(AttentionMask::hf_sliding_window(2), AttentionMask::sliding_window(2)));
  REQUIRE(same(AttentionMask::sliding_window(1), AttentionMask::local(0, 0)));
  // The docs/attention.md table shows these pictures.
  REQUIRE(AttentionMask::sliding_window(3).describe(5) ==
          "local(2,0) (T=5, S=5): row i, '#' = key j allowed\n"
          "   0 #....    1 keys\n"
          "   1 ##...    2 keys\n"
          "   2 ###..    3 keys\n"
          "   3 .###.    3 keys\n"
          "   4 ..###    3 keys\n");
  REQUIRE(AttentionMask::sliding_window(3, W::Centered).describe(5) ==
          "local(1,1) (T=5, S=5): row i, '#' = key j allowed\n"
          "   0 ##...    2 keys\n"
          "   1 ###..    3 keys\n"
          "   2 .###.    3 keys\n"
          "   3 ..###    3 keys\n"
          "   4 ...##    2 keys\n");
  REQUIRE_ERROR(AttentionMask::sliding_window(0), "sliding_window: keys must be >= 1");
  REQUIRE_ERROR(AttentionMask::sliding_window(4, W::Centered),
                "a centered window has an odd number of keys");
}

TEST_CASE("blocked windows: block size dividing or not, look-back, causal inside",
          "[attention_mask]") {
  REQUIRE(AttentionMask::blocked(2).keys_per_row(6) == V{2, 2, 2, 2, 2, 2});
  REQUIRE(AttentionMask::blocked(3).keys_per_row(7) == V{3, 3, 3, 3, 3, 3, 1});  // last block short
  REQUIRE(AttentionMask::blocked(3, {0, 0, true}).keys_per_row(7) == V{1, 2, 3, 1, 2, 3, 1});
  REQUIRE(AttentionMask::blocked(2, {1, 0, false}).keys_per_row(6) == V{2, 2, 4, 4, 4, 4});
  REQUIRE(AttentionMask::blocked(2, {1, 0, true}).keys_per_row(6) == V{1, 2, 3, 4, 3, 4});
  REQUIRE(AttentionMask::blocked(2, {0, 1, false}).keys_per_row(5) == V{4, 4, 3, 3, 1});
  REQUIRE(AttentionMask::blocked(10).keys_per_row(4) == V{4, 4, 4, 4});  // W >= T: full
  REQUIRE(AttentionMask::blocked(1).keys_per_row(3) == V{1, 1, 1});
  // T != S: blocks are positions from 0 on both axes.
  REQUIRE(AttentionMask::blocked(2).keys_per_row(3, 5) == V{2, 2, 2});
  REQUIRE_ERROR(AttentionMask::blocked(0),
                "AttentionMask::blocked: block size W must be >= 1, got 0");
  REQUIRE_ERROR(AttentionMask::blocked(2, {-1, 0, false}), "look_back must be >= 0");
}

TEST_CASE("more blocked parts than the kernels' fixed slots intersect like any others",
          "[attention_mask]") {
  // Six parts: four in MaskDesc's slots, two in its host list (ops/kern/kernel_codes.hpp).
  auto six_parts = [](CausalAlign al) {
    return std::vector<AttentionMask>{AttentionMask::blocked(2, {1, 0, false}, al),
                                      AttentionMask::blocked(3, {1, 1, false}, al),
                                      AttentionMask::blocked(4, {}, al),
                                      AttentionMask::blocked(5, {0, 1, false}, al),
                                      AttentionMask::blocked(6, {1, 0, true}, al),
                                      AttentionMask::blocked(7, {2, 0, false}, al)};
  };
  for (CausalAlign al : {CausalAlign::TopLeft, CausalAlign::BottomRight}) {
    const std::vector<AttentionMask> parts = six_parts(al);
    for (auto [T, S] : {std::pair<int64_t, int64_t>{23, 23}, {9, 23}}) {
      AttentionMask all = AttentionMask::causal(al);
      for (const AttentionMask& p : parts) all = all & p;
      for (int64_t i = 0; i < T; ++i) {
        std::pair<int64_t, int64_t> want = AttentionMask::causal(al).key_range(i, T, S);
        for (const AttentionMask& p : parts) {
          // each part alone, aligned like the whole mask
          AttentionMask q = AttentionMask::causal(al) & p;
          const auto r = q.key_range(i, T, S);
          want = {std::max(want.first, r.first), std::min(want.second, r.second)};
        }
        INFO("row " << i << ", T " << T << ", S " << S);
        REQUIRE(all.key_range(i, T, S) == want);
      }
    }
  }
  // Keys per row at T = S = 12 without causal, from the definition (ops/attention/attention.hpp) by hand.
  const std::vector<AttentionMask> p = six_parts(CausalAlign::TopLeft);
  REQUIRE((p[0] & p[1] & p[2] & p[3] & p[4] & p[5]).keys_per_row(12) ==
          V{1, 2, 3, 4, 1, 1, 2, 3, 1, 2, 1, 2});
}

TEST_CASE("bool masks state their polarity - padding and lengths", "[attention_mask]") {
  // PyTorch MHA: True = blocked. SDPA: True = allowed. The same tensor, opposite meanings.
  Tensor tri =
      tensor(std::vector<bool>{false, true, true, false, false, true, false, false, false}, {3, 3});
  REQUIRE(AttentionMask::from_bool(tri, MaskPolarity::TrueBlocked).keys_per_row(3) == V{1, 2, 3});
  REQUIRE(AttentionMask::from_bool(tri, MaskPolarity::TrueAllowed).keys_per_row(3) == V{2, 1, 0});
  // The seed's attention(Q, K, V, mask): mask == 0 blocked, any dtype.
  Tensor lower = tensor(std::vector<float>{1, 0, 0, 1, 1, 0, 1, 1, 1}, {3, 3});
  REQUIRE(AttentionMask::from_seed(lower).keys_per_row(3) == V{1, 2, 3});
  // Key padding (B, S), PyTorch polarity, and lengths: per batch.
  Tensor pad = tensor(std::vector<bool>{false, false, true, false, true, true}, {2, 3});
  AttentionMask p = AttentionMask::key_padding(pad, MaskPolarity::TrueBlocked);
  REQUIRE(p.keys_per_row(2, 3, 0) == V{2, 2});
  REQUIRE(p.keys_per_row(2, 3, 1) == V{1, 1});
  AttentionMask len = AttentionMask::key_lengths(tensor(std::vector<int64_t>{3, 1}));
  REQUIRE(len.keys_per_row(2, 3, 0) == V{3, 3});
  REQUIRE(len.keys_per_row(2, 3, 1) == V{1, 1});
  // Additive float masks: -inf blocks, finite values only shift scores.
  Tensor add = tensor(std::vector<double>{0, -INFINITY, 0.5, 0}, {2, 2});
  AttentionMask a = AttentionMask::additive(add);
  REQUIRE(a.keys_per_row(2) == V{1, 2});
  REQUIRE(a.additive_at(0, 0, 1, 0, 2, 2) == 0.5);
  REQUIRE_ERROR(AttentionMask::from_bool(lower, MaskPolarity::TrueAllowed),
                "AttentionMask::from_bool: mask (3,3) has dtype float32; a bool mask is needed");
  REQUIRE_ERROR(AttentionMask::key_padding(pad.to(kInt64), MaskPolarity::TrueBlocked),
                "AttentionMask::key_padding: mask (2,3) has dtype int64, expected bool");
  REQUIRE_ERROR(AttentionMask::key_lengths(tensor(std::vector<int64_t>{-1})),
                "lengths[0] = -1 is negative");
}

TEST_CASE("masks combine by intersection - fully masked rows show as 0 keys", "[attention_mask]") {
  Tensor pad = tensor(std::vector<bool>{false, false, false, true, true, true}, {1, 6});
  AttentionMask m =
      AttentionMask::local(1, 0) & AttentionMask::key_padding(pad, MaskPolarity::TrueBlocked);
  REQUIRE(m.keys_per_row(6) == V{1, 2, 2, 1, 0, 0});  // rows 4, 5: padding + window = no key
  REQUIRE(m.name() == "local(1,0) & key_padding(B=1, S=6)");
  // key_lengths names B and lists the lengths: "(1)" alone read as "length 1".
  REQUIRE(AttentionMask::key_lengths(tensor(std::vector<int64_t>{5})).name() ==
          "key_lengths(B=1: 5)");
  REQUIRE(AttentionMask::key_lengths(tensor(std::vector<int64_t>{3, 7})).name() ==
          "key_lengths(B=2: 3,7)");
  AttentionMask c =
      AttentionMask::causal() & AttentionMask::local(5, 5) & AttentionMask::blocked(4);
  REQUIRE(c.keys_per_row(6) == V{1, 2, 3, 4, 1, 2});
  REQUIRE_ERROR(AttentionMask::causal() & AttentionMask::local(1, 1, CausalAlign::BottomRight),
                "their causal alignments differ");
  // Dense materialisation agrees with allowed().
  Tensor d = m.dense_allowed(1, 2, 6, 6);
  REQUIRE(d.shape() == Shape{1, 2, 6, 6});
  int64_t n = 0;
  for (bool v : d.to_vector<bool>()) n += v;
  REQUIRE(n == 2 * (1 + 2 + 2 + 1));
}

TEST_CASE("describe draws the pattern with keys per row", "[attention_mask]") {
  std::string d = AttentionMask::local(1, 0).describe(4);
  REQUIRE(d ==
          "local(1,0) (T=4, S=4): row i, '#' = key j allowed\n"
          "   0 #...    1 keys\n"
          "   1 ##..    2 keys\n"
          "   2 .##.    2 keys\n"
          "   3 ..##    2 keys\n");
  REQUIRE(AttentionMask().describe(1).find("none") == 0);
}

TEST_CASE("check() names the part and the expected layout", "[attention_mask]") {
  Tensor pad = zeros({4, 9}, kBool);
  AttentionMask p = AttentionMask::key_padding(pad, MaskPolarity::TrueBlocked);
  REQUIRE_ERROR(p.check("multihead_attention", 4, 2, 10, 10),
                "multihead_attention: key_padding_mask (4,9) must be (B, S) = (4, 10)");
  AttentionMask b = AttentionMask::from_bool(zeros({3, 5}, kBool), MaskPolarity::TrueBlocked);
  REQUIRE_ERROR(b.check("sdpa", 2, 2, 4, 5),
                "sdpa: bool mask (3,5) does not broadcast to (B, NH, T, S) = (2,2,4,5)");
  AttentionMask l = AttentionMask::key_lengths(tensor(std::vector<int64_t>{3, 7}));
  REQUIRE_ERROR(l.check("sdpa", 2, 1, 4, 5), "sdpa: key length 7 of batch 1 exceeds S = 5");
}

TEST_CASE("masks built from strided views read the view's elements", "[attention_mask][views]") {
  // Each data part from a transposed or narrowed view equals the part from a contiguous copy.
  manual_seed(7);
  const int64_t B = 2, T = 3, S = 4;
  Tensor pad_sb = lt(rand({S, B}), full({}, 0.4));    // (S, B): its transpose is (B, S)
  Tensor allow_st = lt(rand({S, T}), full({}, 0.7));  // (S, T): its transpose is (T, S)
  Tensor add_st = randn({S, T}, kFloat64);
  Tensor len = tensor(std::vector<int64_t>{9, 2, 9, 3}, {2, 2});  // column 1: {2, 3}, stride 2
  const std::vector<std::pair<AttentionMask, AttentionMask>> pairs{
      {AttentionMask::key_padding(transpose(pad_sb, 0, 1), MaskPolarity::TrueBlocked),
       AttentionMask::key_padding(transpose(pad_sb, 0, 1).contiguous(), MaskPolarity::TrueBlocked)},
      {AttentionMask::from_bool(transpose(allow_st, 0, 1), MaskPolarity::TrueAllowed),
       AttentionMask::from_bool(transpose(allow_st, 0, 1).contiguous(), MaskPolarity::TrueAllowed)},
      {AttentionMask::additive(transpose(add_st, 0, 1)),
       AttentionMask::additive(transpose(add_st, 0, 1).contiguous())},
      {AttentionMask::key_lengths(select(len, 1, 1)),
       AttentionMask::key_lengths(select(len, 1, 1).contiguous())},
  };
  for (const auto& [view, copy] : pairs) {
    INFO(copy.name());
    REQUIRE(view.dense_allowed(B, 1, T, S).to_vector<bool>() ==
            copy.dense_allowed(B, 1, T, S).to_vector<bool>());
    for (int64_t i = 0; i < T; ++i)
      for (int64_t j = 0; j < S; ++j)
        REQUIRE(view.additive_at(1, 0, i, j, T, S) == copy.additive_at(1, 0, i, j, T, S));
  }
}

TEST_CASE("alibi_slopes: floating dtypes only, num_heads within its limit", "[attention_mask]") {
  // issue 40: kInt64 gave zeros; 2^50 heads ran out of memory after a minute
  REQUIRE_ERROR(AttentionMask::alibi_slopes(4, kInt64),
                "AttentionMask::alibi_slopes: dtype int64 must be floating (float32 or float64)");
  REQUIRE_ERROR(AttentionMask::alibi_slopes(4, kBool), "dtype bool must be floating");
  REQUIRE_ERROR(AttentionMask::alibi_slopes(int64_t{1} << 50),
                "AttentionMask::alibi_slopes: num_heads 1125899906842624 must be in [1, 2^16 = "
                "65536]");
  REQUIRE_ERROR(AttentionMask::alibi_slopes(0), "num_heads 0 must be in [1, 2^16 = 65536]");
  // the paper's slopes for 4 heads: 2^-2, 2^-4, 2^-6, 2^-8
  tgt::require_close(AttentionMask::alibi_slopes(4, kFloat64),
                     tensor(std::vector<double>{0.25, 0.0625, 0.015625, 0.00390625}), 0, 0,
                     "alibi_slopes(4)");
}
