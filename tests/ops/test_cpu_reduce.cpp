// tests/ops/test_cpu_reduce.cpp — the reduction kernels of ops/reduce/cpu/reduce.cpp against plain
// raw-loop references, float64 and float32 (and int64 where the kernel takes it), on odd
// (outer, r, inner) views: inner > 1 (also wider than one kernel block), size-1 dims, empty
// views, rows holding NaN, -inf and +inf; results bit-identical at 1 and 3 threads; and the ops
// over non-adjacent dims (the permuted path) against the same references.
#include "helpers.hpp"

#include "ops/core/cpu/kernels.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <random>

using namespace tg;
using tgt::require_near;

namespace {
struct Geo {
  int64_t outer, r, inner;
};
std::string geo_str(const Geo& g) { return fmt::format("({}, {}, {})", g.outer, g.r, g.inner); }

const std::vector<Geo> kGeos = {{1, 1, 1},   {3, 7, 1},  {5, 1, 3},    {2, 37, 5}, {1, 300, 1},
                                {4, 3, 300}, {7, 9, 17}, {1, 1000, 1}, {6, 33, 2}, {2, 5, 513},
                                {0, 3, 2},   {3, 4, 0},  {3, 2, 1}};
// Views with r == 0 (sum, mean and var only).
const std::vector<Geo> kEmptyR = {{2, 0, 3}, {4, 0, 1}};

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

// Random values in [-3, 3); with specials, output row o = 0 gets one NaN, o = 1 is all -inf,
// o = 2 gets one +inf (when those rows exist).
template <typename T>
std::vector<T> make_x(const Geo& g, unsigned seed, bool specials) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-3, 3);
  std::vector<T> x(g.outer * g.r * g.inner);
  for (T& v : x) v = static_cast<T>(std::is_integral_v<T> ? std::floor(u(rng) * 3) : u(rng));
  if (!specials || g.r == 0 || g.inner == 0 || !std::is_floating_point_v<T>) return x;
  auto at = [&](int64_t o, int64_t j, int64_t i) -> T& { return x[(o * g.r + j) * g.inner + i]; };
  if (g.outer > 0) at(0, g.r / 2, 0) = static_cast<T>(kNaN);
  if (g.outer > 1)
    for (int64_t j = 0; j < g.r; ++j)
      for (int64_t i = 0; i < g.inner; ++i) at(1, j, i) = static_cast<T>(-kInf);
  if (g.outer > 2) at(2, g.r - 1, g.inner - 1) = static_cast<T>(kInf);
  return x;
}

// The reference reductions: for output (o, i), v(j) = x[o, j, i].
template <typename T, typename F>
std::vector<double> ref_each(const std::vector<T>& x, const Geo& g, F f) {
  std::vector<double> out;
  for (int64_t o = 0; o < g.outer; ++o)
    for (int64_t i = 0; i < g.inner; ++i) {
      std::vector<double> v;
      for (int64_t j = 0; j < g.r; ++j)
        v.push_back(static_cast<double>(x[(o * g.r + j) * g.inner + i]));
      out.push_back(f(v));
    }
  return out;
}
double ref_sum(const std::vector<double>& v) {
  double s = 0;
  for (double e : v) s += e;
  return s;
}
double ref_abs_sum(const std::vector<double>& v) {
  double s = 0;
  for (double e : v) s += std::fabs(e);
  return s;
}
double ref_extreme(const std::vector<double>& v, bool is_max) {
  double b = v[0];
  for (double e : v) {
    if (std::isnan(e)) return e;
    if (is_max ? e > b : e < b) b = e;
  }
  return b;
}
double ref_argmax(const std::vector<double>& v) {
  size_t b = 0;
  for (size_t j = 0; j < v.size(); ++j) {
    if (std::isnan(v[b])) break;
    if (std::isnan(v[j]) || v[j] > v[b]) b = j;
  }
  return static_cast<double>(b);
}

// Tolerances for a kernel that accumulates in double against a sequential double sum: the
// order differs (≈1e-16 per term of Σ|x|), and float32 results round once more.
template <typename T>
double rtol_of() {
  return std::is_same_v<T, float> ? 1.2e-7 : 0.0;
}
constexpr double kOrder = 1e-14;

template <typename T>
void check_forward(const Geo& g, bool specials) {
  const std::string what = fmt::format("{} {} specials {}", sizeof(T) == 4 ? "float32" : "float64",
                                       geo_str(g), specials);
  std::vector<T> x = make_x<T>(g, 7, specials);
  const int64_t no = g.outer * g.inner;
  std::vector<double> abs_sum = ref_each(x, g, ref_abs_sum);
  double atol = 0;
  for (double s : abs_sum) atol = std::max(atol, std::isfinite(s) ? kOrder * s : 0.0);

  std::vector<T> out(no);
  cpu::reduce_sum<T>(out.data(), x.data(), g.outer, g.r, g.inner);
  require_near(out, ref_each(x, g, ref_sum), rtol_of<T>(), atol, "reduce_sum " + what);
  cpu::reduce_sum<T>(out.data(), x.data(), g.outer, g.r, g.inner, static_cast<double>(g.r));
  require_near(out, ref_each(x, g, [&](const std::vector<double>& v) { return ref_sum(v) / g.r; }),
               rtol_of<T>(), atol, "reduce_sum / r (mean) " + what);

  const double denom = std::max<int64_t>(g.r - 1, 0);
  std::vector<double> mean(no);
  cpu::reduce_var<T>(out.data(), mean.data(), x.data(), g.outer, g.r, g.inner, denom);
  std::vector<double> want_mean =
      ref_each(x, g, [&](const std::vector<double>& v) { return ref_sum(v) / g.r; });
  require_near(mean, want_mean, 0, atol, "reduce_var mean " + what);
  std::vector<double> want_var = ref_each(x, g, [&](const std::vector<double>& v) {
    const double m = ref_sum(v) / v.size();
    double ss = 0;
    for (double e : v) ss += (e - m) * (e - m);
    return ss / denom;
  });
  require_near(out, want_var, rtol_of<T>() + 1e-13, 1e-13, "reduce_var " + what);

  if (g.r == 0) return;
  for (bool is_max : {true, false}) {
    cpu::reduce_extreme<T>(is_max ? cpu::RedOp::Max : cpu::RedOp::Min, out.data(), x.data(),
                           g.outer, g.r, g.inner);
    require_near(
        out, ref_each(x, g, [&](const std::vector<double>& v) { return ref_extreme(v, is_max); }),
        0, 0, (is_max ? "reduce_extreme max " : "reduce_extreme min ") + what);
  }
  std::vector<int64_t> am(no);
  cpu::argmax<T>(am.data(), x.data(), g.outer, g.r, g.inner);
  require_near(am, ref_each(x, g, ref_argmax), 0, 0, "argmax " + what);
}

template <typename T>
void check_backward(const Geo& g, bool specials) {
  const std::string what = fmt::format("{} {} specials {}", sizeof(T) == 4 ? "float32" : "float64",
                                       geo_str(g), specials);
  std::vector<T> x = make_x<T>(g, 9, specials);
  const int64_t no = g.outer * g.inner, n = g.outer * g.r * g.inner;
  std::vector<T> dout = make_x<T>({g.outer, 1, g.inner}, 10, false), dx(n);
  auto idx = [&](int64_t o, int64_t j, int64_t i) { return (o * g.r + j) * g.inner + i; };

  const double scale = 1.0 / 3;
  cpu::reduce_sum_backward<T>(dx.data(), dout.data(), g.outer, g.r, g.inner, scale);
  std::vector<double> want(n);
  for (int64_t o = 0; o < g.outer; ++o)
    for (int64_t j = 0; j < g.r; ++j)
      for (int64_t i = 0; i < g.inner; ++i)
        want[idx(o, j, i)] = static_cast<T>(static_cast<double>(dout[o * g.inner + i]) * scale);
  require_near(dx, want, 0, 0, "reduce_sum_backward " + what);

  if (g.r > 0) {
    // Make ties: copy the first row's values into the last row.
    for (int64_t o = 0; o < g.outer; ++o)
      for (int64_t i = 0; i < g.inner; ++i) x[idx(o, g.r - 1, i)] = x[idx(o, 0, i)];
    std::vector<T> m(no);
    cpu::reduce_extreme<T>(cpu::RedOp::Max, m.data(), x.data(), g.outer, g.r, g.inner);
    cpu::reduce_extreme_backward<T>(dx.data(), dout.data(), x.data(), m.data(), g.outer, g.r,
                                    g.inner);
    for (int64_t o = 0; o < g.outer; ++o)
      for (int64_t i = 0; i < g.inner; ++i) {
        const T mv = m[o * g.inner + i];
        int64_t ties = 0;
        for (int64_t j = 0; j < g.r; ++j) ties += x[idx(o, j, i)] == mv;
        for (int64_t j = 0; j < g.r; ++j)
          want[idx(o, j, i)] =
              x[idx(o, j, i)] == mv
                  ? static_cast<T>(static_cast<double>(dout[o * g.inner + i]) * (1.0 / ties))
                  : 0.0;
      }
    require_near(dx, want, 0, 0, "reduce_extreme_backward " + what);
  }

  std::vector<double> mean(no);
  std::vector<T> v(no);
  const double denom = 2.5;
  cpu::reduce_var<T>(v.data(), mean.data(), x.data(), g.outer, g.r, g.inner, denom);
  cpu::reduce_var_backward<T>(dx.data(), dout.data(), x.data(), mean.data(), g.outer, g.r, g.inner,
                              denom);
  for (int64_t o = 0; o < g.outer; ++o)
    for (int64_t j = 0; j < g.r; ++j)
      for (int64_t i = 0; i < g.inner; ++i)
        want[idx(o, j, i)] =
            static_cast<T>(static_cast<double>(dout[o * g.inner + i]) * 2.0 *
                           (static_cast<double>(x[idx(o, j, i)]) - mean[o * g.inner + i]) / denom);
  require_near(dx, want, rtol_of<T>() + 1e-15, 1e-15, "reduce_var_backward " + what);
}
}  // namespace

TEST_CASE("cpu reduction kernels match raw loops: float64 and float32, odd views, NaN and inf",
          "[reduce][cpu]") {
  for (const Geo& g : kGeos)
    for (bool specials : {false, true}) {
      check_forward<double>(g, specials);
      check_forward<float>(g, specials);
      check_backward<double>(g, specials);
      check_backward<float>(g, specials);
    }
  for (const Geo& g : kEmptyR) {
    check_forward<double>(g, false);
    check_forward<float>(g, false);
    check_backward<double>(g, false);
  }
}

TEST_CASE("cpu reduction kernels on int64: sum, max, min and argmax are exact", "[reduce][cpu]") {
  for (const Geo& g : kGeos) {
    std::vector<int64_t> x = make_x<int64_t>(g, 3, false);
    std::vector<int64_t> out(g.outer * g.inner);
    cpu::reduce_sum<int64_t>(out.data(), x.data(), g.outer, g.r, g.inner);
    require_near(out, ref_each(x, g, ref_sum), 0, 0, "int64 reduce_sum " + geo_str(g));
    cpu::reduce_extreme<int64_t>(cpu::RedOp::Max, out.data(), x.data(), g.outer, g.r, g.inner);
    require_near(out,
                 ref_each(x, g, [](const std::vector<double>& v) { return ref_extreme(v, true); }),
                 0, 0, "int64 max " + geo_str(g));
    cpu::reduce_extreme<int64_t>(cpu::RedOp::Min, out.data(), x.data(), g.outer, g.r, g.inner);
    require_near(out,
                 ref_each(x, g, [](const std::vector<double>& v) { return ref_extreme(v, false); }),
                 0, 0, "int64 min " + geo_str(g));
    cpu::argmax<int64_t>(out.data(), x.data(), g.outer, g.r, g.inner);
    require_near(out, ref_each(x, g, ref_argmax), 0, 0, "int64 argmax " + geo_str(g));
  }
}

// The kernels add rows in pairs (inner == 1) and four rows per pass over the accumulators
// (inner > 1) for speed; each output must still get the bits of its own additions in order.
// x with -0 and subnormals sprinkled in (make_x's NaN and infinities are in its first rows).
template <typename T>
std::vector<T> with_zeros_and_subnormals(std::vector<T> x) {
  const T sub = std::numeric_limits<T>::denorm_min();
  for (size_t i = 0; i < x.size(); ++i) {
    if (i % 7 == 3) x[i] = -T(0);
    if (i % 11 == 5) x[i] = sub * T(static_cast<double>(i % 5) + 1);
    if (i % 13 == 6) x[i] = -sub;
  }
  return x;
}

template <typename T>
void check_sum_order() {
  std::vector<int64_t> lengths;  // every tail of 4 and 8 lanes times four accumulators, and more
  for (int64_t r = 1; r <= 67; ++r) lengths.push_back(r);
  for (int64_t r : {128, 129, 1000}) lengths.push_back(r);
  for (int64_t r : lengths) {
    for (int64_t outer : {1, 2, 3, 5, 64}) {
      const Geo g{outer, r, 1};
      std::vector<T> x = with_zeros_and_subnormals(make_x<T>(g, 11, true)), out(outer), one(1);
      cpu::reduce_sum<T>(out.data(), x.data(), outer, r, 1);
      for (int64_t o = 0; o < outer; ++o) {
        cpu::reduce_sum<T>(one.data(), x.data() + o * r, 1, r, 1);  // the row alone
        INFO(geo_str(g) << " row " << o);
        REQUIRE(std::memcmp(&out[o], &one[0], sizeof(T)) == 0);
      }
    }
    for (int64_t inner : {3, 8, 17, 300}) {  // the column path (inner == 1 is a row, above)
      const Geo g{2, r, inner};
      std::vector<T> x = with_zeros_and_subnormals(make_x<T>(g, 12, true)), out(2 * inner),
                     want(2 * inner);
      cpu::reduce_sum<T>(out.data(), x.data(), 2, r, inner);
      for (int64_t o = 0; o < 2; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          double acc = 0;  // row after row, in double
          for (int64_t j = 0; j < r; ++j) acc += static_cast<double>(x[(o * r + j) * inner + i]);
          want[o * inner + i] = static_cast<T>(acc);
        }
      INFO(geo_str(g));
      REQUIRE(std::memcmp(out.data(), want.data(), out.size() * sizeof(T)) == 0);
    }
  }
}

TEST_CASE("cpu sums give every output the bits of its own row, added alone and in order",
          "[reduce][cpu]") {
  // The build's own column kernel and the AVX-512 one (where the CPU has it): the same bits.
  struct Restore {
    ~Restore() { cpu::reset_simd_kernels(); }
  } restore;
  for (bool avx512 : {false, true}) {
    if (!cpu::set_kernel_variant(cpu::KernelFamily::Reduce, avx512)) {
      WARN("no AVX-512 in this build or CPU: the AVX-512 column sums are not checked here");
      continue;
    }
    INFO("kernels " << cpu::simd_kernels());
    check_sum_order<float>();
    check_sum_order<double>();
  }
}

TEST_CASE("cpu reduction kernels give the same bits at 1 and 3 threads", "[reduce][cpu]") {
  const int saved = get_num_threads();
  for (const Geo& g : {Geo{64, 1000, 1}, Geo{1, 3000, 40}, Geo{3, 500, 300}, Geo{700, 9, 31}}) {
    std::vector<float> x = make_x<float>(g, 5, true),
                       dout = make_x<float>({g.outer, 1, g.inner}, 6, false);
    const int64_t no = g.outer * g.inner, n = g.outer * g.r * g.inner;
    auto run = [&](int threads) {
      set_num_threads(threads);
      std::vector<float> o(5 * no), dx(3 * n);
      std::vector<double> mean(no);
      std::vector<int64_t> am(no);
      cpu::reduce_sum<float>(o.data(), x.data(), g.outer, g.r, g.inner);
      cpu::reduce_extreme<float>(cpu::RedOp::Max, o.data() + no, x.data(), g.outer, g.r, g.inner);
      cpu::reduce_var<float>(o.data() + 2 * no, mean.data(), x.data(), g.outer, g.r, g.inner, 7);
      cpu::argmax<float>(am.data(), x.data(), g.outer, g.r, g.inner);
      cpu::reduce_sum_backward<float>(dx.data(), dout.data(), g.outer, g.r, g.inner, 0.25);
      cpu::reduce_extreme_backward<float>(dx.data() + n, dout.data(), x.data(), o.data() + no,
                                          g.outer, g.r, g.inner);
      cpu::reduce_var_backward<float>(dx.data() + 2 * n, dout.data(), x.data(), mean.data(),
                                      g.outer, g.r, g.inner, 7);
      std::vector<unsigned char> bytes;
      auto put = [&](const void* p, size_t len) {
        const auto* c = static_cast<const unsigned char*>(p);
        bytes.insert(bytes.end(), c, c + len);
      };
      put(o.data(), o.size() * 4);
      put(mean.data(), mean.size() * 8);
      put(am.data(), am.size() * 8);
      put(dx.data(), dx.size() * 4);
      return bytes;
    };
    const auto one = run(1), three = run(3);
    INFO(geo_str(g));
    REQUIRE(one == three);
  }
  set_num_threads(saved);
}

TEST_CASE("sum, mean, max and var over non-adjacent dims match raw loops, NaN rows included",
          "[reduce][cpu]") {
  manual_seed(14);
  for (DType dt : {kFloat64, kFloat32}) {
    Tensor x = randn({3, 5, 4, 70}, dt);
    // One NaN (x[0, 0, 0, 3]) and a row of -inf (x[1, 2, 3, :]).
    std::vector<double> v = x.to_vector<double>();
    v[3] = kNaN;
    for (int64_t t = 0; t < 70; ++t) v[((1 * 5 + 2) * 4 + 3) * 70 + t] = -kInf;
    x = tensor(v, {3, 5, 4, 70}).to(dt);
    const double rtol = dt == kFloat32 ? 1.2e-7 : 0, atol = 1e-12;
    for (const std::vector<int64_t>& dims :
         std::vector<std::vector<int64_t>>{{1, 3}, {0, 2}, {0, 3}, {0, 1, 3}, {1}, {0}, {}}) {
      const std::string what = fmt::format("{} dims [{}]", dtype_name(dt), fmt::join(dims, ","));
      // Raw reference: group by the kept index.
      const Shape s = x.shape();
      std::vector<bool> red(4, dims.empty());
      for (int64_t d : dims) red[d] = true;
      std::map<int64_t, std::vector<double>> groups;
      std::vector<double> xs = x.to_vector<double>();
      for (int64_t f = 0; f < x.numel(); ++f) {
        int64_t rem = f, key = 0, mult = 1;
        for (int64_t d = 3; d >= 0; --d) {
          const int64_t id = rem % s[d];
          rem /= s[d];
          if (!red[d]) {
            key += id * mult;
            mult *= s[d];
          }
        }
        groups[key].push_back(xs[f]);
      }
      std::vector<double> ws, wm, wx, wv;
      for (auto& [k, g] : groups) {
        const double sm = ref_sum(g), m = sm / g.size();
        double ss = 0;
        for (double e : g) ss += (e - m) * (e - m);
        ws.push_back(sm);
        wm.push_back(m);
        wx.push_back(ref_extreme(g, true));
        wv.push_back(ss / (g.size() - 1));
      }
      require_near(sum(x, dims).to_vector<double>(), ws, rtol, atol, "sum " + what);
      require_near(mean(x, dims).to_vector<double>(), wm, rtol, atol, "mean " + what);
      require_near(max(x, dims).to_vector<double>(), wx, 0, 0, "max " + what);
      require_near(var(x, dims).to_vector<double>(), wv, rtol + 1e-13, atol, "var " + what);
    }
  }
}
