// bench/attention_check.cu — standalone device check for cuda/attention.cu (not part of the repo's
// build): parity of attention_forward / attention_backward against a float64 CPU reference for
// every mask kind, bitwise determinism of the backward, then timings of (B, NH, T, hs) = (4, 16, T,
// 64) F32. Build (repo root):  nvcc -std=c++17 -arch=sm_90 -O2 -I. bench/attention_check.cu -o
// /tmp/attention_check Run:                /tmp/attention_check [--no-bench]        exit code 0 =
// all parity checks passed
#include "cuda/attention.cu"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

// ---- the runtime functions attention.cu needs (cuda/runtime.cu provides them in the library) ----
namespace tg::cuda {
void* alloc(size_t bytes, int) {
  void* p = nullptr;
  if (cudaMalloc(&p, bytes) != cudaSuccess) throw Error("cudaMalloc failed");
  return p;
}
void free(void* p, int) { cudaFree(p); }
int current_device() { return 0; }
void* stream() { return nullptr; }
namespace detail {
void throw_cuda(cudaError_t e, const char* call, const char* file, int line) {
  throw Error(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " +
              cudaGetErrorString(e));
}
void throw_cublas(cublasStatus_t, const char* call, const char*, int) { throw Error(call); }
}  // namespace detail
}  // namespace tg::cuda

using tg::cuda::MaskDesc;

// ---- host mask reference (AttentionMask::key_range + data parts) ----
struct HostMask {
  MaskDesc d;  // structure + strides; pointers below are host copies
  std::vector<char> key_allowed, allowed;
  std::vector<int64_t> lengths;
  std::vector<double> additive;
};
static int64_t floor_div_h(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}
static bool allowed_h(const HostMask& m, int64_t b, int64_t h, int64_t i, int64_t j, int64_t S,
                      double* add) {
  const MaskDesc& d = m.d;
  int64_t lo = 0, hi = S - 1, ip = i + d.shift;
  if (d.causal) hi = std::min(hi, ip);
  if (d.has_local && d.left >= 0) lo = std::max(lo, ip - d.left);  // negative: no bound
  if (d.has_local && d.right >= 0) hi = std::min(hi, ip + d.right);
  for (int k = 0; k < d.n_blocked; ++k) {
    int64_t blk = floor_div_h(ip, d.block_W[k]);
    lo = std::max(lo, (blk - d.block_back[k]) * d.block_W[k]);
    hi = std::min(hi, (blk + d.block_ahead[k] + 1) * d.block_W[k] - 1);
    if (d.block_causal[k]) hi = std::min(hi, ip);
  }
  *add = 0;
  if (j < lo || j > hi) return false;
  if (!m.key_allowed.empty() && !m.key_allowed[b * S + j]) return false;
  if (!m.lengths.empty() && j >= m.lengths[b]) return false;
  const int64_t* sa = d.allowed_stride;
  if (!m.allowed.empty() && !m.allowed[b * sa[0] + h * sa[1] + i * sa[2] + j * sa[3]]) return false;
  const int64_t* sd = d.additive_stride;
  if (!m.additive.empty()) *add = m.additive[b * sd[0] + h * sd[1] + i * sd[2] + j * sd[3]];
  return true;
}

// Reference forward + backward in double: o, lse, dq, dk, dv.
struct Ref {
  std::vector<double> o, lse, dq, dk, dv;
};
static Ref reference(const std::vector<double>& q, const std::vector<double>& k,
                     const std::vector<double>& v, const std::vector<double>& g, const HostMask& m,
                     int64_t B, int64_t NH, int64_t T, int64_t S, int64_t hs, int64_t hsv,
                     double scale) {
  Ref r;
  r.o.assign(B * NH * T * hsv, 0), r.lse.assign(B * NH * T, 0), r.dq.assign(q.size(), 0);
  r.dk.assign(k.size(), 0), r.dv.assign(v.size(), 0);
  std::vector<double> s(S), p(S), dp(S);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < NH; ++h)
      for (int64_t i = 0; i < T; ++i) {
        const int64_t bh = b * NH + h;
        const double* qi = &q[(bh * T + i) * hs];
        double mx = -INFINITY;
        for (int64_t j = 0; j < S; ++j) {
          double add;
          s[j] = -INFINITY;
          if (!allowed_h(m, b, h, i, j, S, &add)) continue;
          double dot = 0;
          for (int64_t e = 0; e < hs; ++e) dot += qi[e] * k[(bh * S + j) * hs + e];
          s[j] = scale * dot + add;
          mx = std::max(mx, s[j]);
        }
        if (mx == -INFINITY) {  // no allowed key: o = 0, lse = -inf, no gradient
          r.lse[bh * T + i] = -INFINITY;
          continue;
        }
        double l = 0;
        for (int64_t j = 0; j < S; ++j) l += (p[j] = std::exp(s[j] - mx));
        r.lse[bh * T + i] = mx + std::log(l);
        const double* gi = &g[(bh * T + i) * hsv];
        double Di = 0;
        for (int64_t j = 0; j < S; ++j) {
          p[j] /= l;
          dp[j] = 0;
          for (int64_t e = 0; e < hsv; ++e) {
            r.o[(bh * T + i) * hsv + e] += p[j] * v[(bh * S + j) * hsv + e];
            dp[j] += gi[e] * v[(bh * S + j) * hsv + e];
          }
          Di += p[j] * dp[j];
        }
        for (int64_t j = 0; j < S; ++j) {
          if (p[j] == 0) continue;
          const double ds = p[j] * (dp[j] - Di);
          for (int64_t e = 0; e < hs; ++e) {
            r.dq[(bh * T + i) * hs + e] += scale * ds * k[(bh * S + j) * hs + e];
            r.dk[(bh * S + j) * hs + e] += scale * ds * qi[e];
          }
          for (int64_t e = 0; e < hsv; ++e) r.dv[(bh * S + j) * hsv + e] += p[j] * gi[e];
        }
      }
  return r;
}

template <typename T>
struct Dev {
  T* p = nullptr;
  size_t n = 0;
  explicit Dev(size_t n_) : n(n_) { cudaMalloc(&p, std::max<size_t>(n, 1) * sizeof(T)); }
  ~Dev() { cudaFree(p); }
  void put(const std::vector<T>& h) {
    cudaMemcpy(p, h.data(), n * sizeof(T), cudaMemcpyHostToDevice);
  }
  std::vector<T> get() const {
    std::vector<T> h(n);
    cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost);
    return h;
  }
};

static int failures = 0;

struct Case {
  const char* name;
  int64_t B, NH, T, S, hs, hsv;
  std::function<void(HostMask&, int64_t B, int64_t NH, int64_t T, int64_t S)> mask;
};

template <typename T>
static double compare(const char* what, const std::vector<T>& got, const std::vector<double>& want,
                      double tol) {
  double worst = 0, refmax = 0;
  bool bad = false;
  for (size_t e = 0; e < want.size(); ++e) {
    const double a = got[e], b = want[e];
    if (std::isinf(b) || std::isinf(a)) {
      bad |= a != b;
      continue;
    }
    if (std::isnan(a)) {
      bad = true;
      continue;
    }
    worst = std::max(worst, std::fabs(a - b));
    refmax = std::max(refmax, std::fabs(b));
  }
  const bool ok = !bad && worst <= tol * (1 + refmax);
  if (!ok) {
    ++failures;
    printf("    %-3s FAIL max |diff| %.3g (ref max %.3g)%s\n", what, worst, refmax,
           bad ? " + inf/NaN mismatch" : "");
  }
  return worst;
}

template <typename T>
static void run_case(const Case& c) {
  const tg::cuda::DT dt = sizeof(T) == 4 ? tg::cuda::DT::F32 : tg::cuda::DT::F64;
  std::mt19937 rng(42);
  std::normal_distribution<double> nd;
  auto randv = [&](size_t n, double sc) {
    std::vector<double> x(n);
    for (auto& e : x) e = nd(rng) * sc;
    return x;
  };
  const int64_t B = c.B, NH = c.NH, T_ = c.T, S = c.S, hs = c.hs, hsv = c.hsv;
  std::vector<double> q = randv(B * NH * T_ * hs, 1.5), k = randv(B * NH * S * hs, 1),
                      v = randv(B * NH * S * hsv, 1), g = randv(B * NH * T_ * hsv, 1);
  // round the inputs to T so that the reference sees exactly what the GPU sees
  auto to_t = [](const std::vector<double>& x) { return std::vector<T>(x.begin(), x.end()); };
  std::vector<T> qt = to_t(q), kt = to_t(k), vt = to_t(v), gt = to_t(g);
  q.assign(qt.begin(), qt.end()), k.assign(kt.begin(), kt.end());
  v.assign(vt.begin(), vt.end()), g.assign(gt.begin(), gt.end());
  HostMask hm;
  c.mask(hm, B, NH, T_, S);
  std::vector<T> addt(hm.additive.begin(), hm.additive.end());
  hm.additive.assign(addt.begin(), addt.end());
  const double scale = 1.0 / std::sqrt(double(hs));
  Ref ref = reference(q, k, v, g, hm, B, NH, T_, S, hs, hsv, scale);

  Dev<T> dq_(qt.size()), dk_(kt.size()), dv_(vt.size()), dg(gt.size()), dQ(qt.size()),
      dK(kt.size()), dV(vt.size()), dO(B * NH * T_ * hsv), dL(B * NH * T_), dadd(addt.size());
  Dev<char> dka(hm.key_allowed.size()), dal(hm.allowed.size());
  Dev<int64_t> dlen(hm.lengths.size());
  dq_.put(qt), dk_.put(kt), dv_.put(vt), dg.put(gt);
  MaskDesc md = hm.d;
  if (!hm.key_allowed.empty()) dka.put(hm.key_allowed), md.key_allowed = (const bool*)dka.p;
  if (!hm.allowed.empty()) dal.put(hm.allowed), md.allowed = (const bool*)dal.p;
  if (!hm.lengths.empty()) dlen.put(hm.lengths), md.key_lengths = dlen.p;
  if (!addt.empty()) dadd.put(addt), md.additive = dadd.p;
  cudaMemset(dQ.p, 0xff, dQ.n * sizeof(T));  // NaN garbage: every output must be written
  cudaMemset(dK.p, 0xff, dK.n * sizeof(T));
  cudaMemset(dV.p, 0xff, dV.n * sizeof(T));
  cudaMemset(dO.p, 0xff, dO.n * sizeof(T));
  tg::kern::AttentionLayout L;
  L.B = B, L.NH = NH, L.T = T_, L.S = S, L.hs = hs, L.hsv = hsv;
  tg::cuda::attention_forward(dt, dO.p, dL.p, dq_.p, dk_.p, dv_.p, L, scale, md);
  tg::cuda::attention_backward(dt, dQ.p, dK.p, dV.p, dg.p, dq_.p, dk_.p, dv_.p, dO.p, dL.p, L,
                               scale, md);
  const std::vector<T> dq1 = dQ.get(), dk1 = dK.get(), dv1 = dV.get();
  tg::cuda::attention_backward(dt, dQ.p, dK.p, dV.p, dg.p, dq_.p, dk_.p, dv_.p, dO.p, dL.p, L,
                               scale, md);
  const cudaError_t err = cudaDeviceSynchronize();
  const int before = failures;
  if (err != cudaSuccess) {
    printf("  %s: CUDA error %s\n", c.name, cudaGetErrorString(err));
    ++failures;
    return;
  }
  const double tol = sizeof(T) == 4 ? 2e-5 : 1e-11;
  compare("o", dO.get(), ref.o, tol);
  compare("lse", dL.get(), ref.lse, tol);
  compare("dq", dq1, ref.dq, tol);
  compare("dk", dk1, ref.dk, tol);
  compare("dv", dv1, ref.dv, tol);
  if (dQ.get() != dq1 || dK.get() != dk1 || dV.get() != dv1) {
    printf("    backward is not deterministic (two runs differ)\n");
    ++failures;
  }
  printf("  %-28s %s (B%ld NH%ld T%ld S%ld hs%ld hsv%ld) %s\n", c.name,
         sizeof(T) == 4 ? "f32" : "f64", B, NH, T_, S, hs, hsv, failures == before ? "ok" : "FAIL");
}

static void bench(bool causal) {
  const int64_t B = 4, NH = 16, hs = 64;
  for (int64_t T = 1024; T <= 16384; T *= 2) {
    const size_t n = B * NH * T * hs;
    Dev<float> q(n), k(n), v(n), o(n), g(n), dq(n), dk(n), dv(n), lse(B * NH * T);
    std::vector<float> h(n);
    std::mt19937 rng(1);
    std::normal_distribution<float> nd;
    for (auto& e : h) e = nd(rng);
    q.put(h), k.put(h), v.put(h), g.put(h);
    MaskDesc m;
    m.causal = causal;
    const double scale = 0.125;
    tg::kern::AttentionLayout L;
    L.B = B, L.NH = NH, L.T = T, L.S = T, L.hs = hs, L.hsv = hs;
    auto fwd = [&] {
      tg::cuda::attention_forward(tg::cuda::DT::F32, o.p, lse.p, q.p, k.p, v.p, L, scale, m);
    };
    auto bwd = [&] {
      tg::cuda::attention_backward(tg::cuda::DT::F32, dq.p, dk.p, dv.p, g.p, q.p, k.p, v.p, o.p,
                                   lse.p, L, scale, m);
    };
    auto time_ms = [&](const std::function<void()>& f) {
      f();
      cudaDeviceSynchronize();
      const int reps = T <= 4096 ? 10 : 3;
      cudaEvent_t a, b;
      cudaEventCreate(&a), cudaEventCreate(&b);
      cudaEventRecord(a);
      for (int r = 0; r < reps; ++r) f();
      cudaEventRecord(b);
      cudaEventSynchronize(b);
      float ms = 0;
      cudaEventElapsedTime(&ms, a, b);
      return ms / reps;
    };
    const double tf = time_ms(fwd), tb = time_ms(bwd);
    const double flops = 4.0 * B * NH * T * T * hs * (causal ? 0.5 : 1.0);
    printf(
        "  %s T=%6ld  fwd %9.3f ms %6.1f TFLOP/s   bwd %9.3f ms %6.1f TFLOP/s (2.5x fwd flops)\n",
        causal ? "causal" : "full  ", T, tf, flops / tf / 1e9, tb, 2.5 * flops / tb / 1e9);
    if (cudaGetLastError() != cudaSuccess) printf("  CUDA error in the benchmark\n");
  }
}

int main(int argc, char** argv) {
  const bool no_bench = argc > 1 && std::strcmp(argv[1], "--no-bench") == 0;
  auto none = [](HostMask&, int64_t, int64_t, int64_t, int64_t) {};
  std::vector<Case> cases = {
      {"none", 2, 2, 70, 70, 16, 16, none},
      {"none hs64 multi-tile", 1, 2, 300, 260, 64, 64, none},
      {"causal", 1, 2, 130, 130, 32, 32, [](HostMask& m, auto...) { m.d.causal = true; }},
      {"causal T=1 bottom-right", 2, 1, 1, 37, 8, 8,
       [](HostMask& m, int64_t, int64_t, int64_t T, int64_t S) {
         m.d.causal = true, m.d.shift = S - T;
       }},
      {"causal bottom-right T>S", 1, 2, 100, 40, 24, 40,
       [](HostMask& m, int64_t, int64_t, int64_t T, int64_t S) {
         m.d.causal = true, m.d.shift = S - T;
       }},
      {"local(40,10)", 1, 2, 600, 600, 64, 64,
       [](HostMask& m, auto...) { m.d.has_local = true, m.d.left = 40, m.d.right = 10; }},
      {"local(-1, 5): no left bound", 1, 1, 90, 120, 32, 32,
       [](HostMask& m, auto...) { m.d.has_local = true, m.d.left = -1, m.d.right = 5; }},
      {"blocked W7 back1 causal", 1, 1, 150, 150, 48, 20,
       [](HostMask& m, auto...) {
         m.d.n_blocked = 1, m.d.block_W[0] = 7, m.d.block_back[0] = 1, m.d.block_causal[0] = true;
       }},
      {"key padding + empty batch", 3, 2, 50, 75, 32, 32,
       [](HostMask& m, int64_t B, int64_t, int64_t, int64_t S) {
         std::mt19937 r(5);
         m.key_allowed.resize(B * S);
         for (int64_t e = 0; e < B * S; ++e) m.key_allowed[e] = (r() % 10) < 7 && e / S != 1;
       }},
      {"lengths (0, 17, S) + causal", 3, 1, 66, 66, 32, 32,
       [](HostMask& m, auto...) {
         m.lengths = {0, 17, 66}, m.d.causal = true;
       }},
      {"bool (T,S) with an empty row", 1, 2, 70, 90, 16, 16,
       [](HostMask& m, int64_t, int64_t, int64_t T, int64_t S) {
         std::mt19937 r(7);
         m.allowed.resize(T * S);
         for (int64_t e = 0; e < T * S; ++e) m.allowed[e] = (r() % 10) < 4 && e / S != 5;
         m.d.allowed_stride[2] = S, m.d.allowed_stride[3] = 1;
       }},
      {"additive (B,1,T,S), -inf row", 2, 2, 50, 80, 32, 32,
       [](HostMask& m, int64_t B, int64_t, int64_t T, int64_t S) {
         std::mt19937 r(11);
         std::normal_distribution<double> nd;
         m.additive.resize(B * T * S);
         for (int64_t e = 0; e < B * T * S; ++e)
           m.additive[e] = (r() % 10) < 2 || e / S == 3 ? -INFINITY : nd(r);
         m.d.additive_stride[0] = T * S, m.d.additive_stride[2] = S, m.d.additive_stride[3] = 1;
       }},
      {"hs128 bottom-right causal", 1, 1, 70, 45, 128, 128,
       [](HostMask& m, int64_t, int64_t, int64_t T, int64_t S) {
         m.d.causal = true, m.d.shift = S - T;
       }},
      {"hs100 / hsv72", 1, 1, 33, 65, 100, 72, none},
  };
  printf("parity (float64 CPU reference) and determinism:\n");
  for (const Case& c : cases) {
    run_case<float>(c);
    run_case<double>(c);
  }
  printf("%d failures\n", failures);
  if (!no_bench) {
    printf("benchmark (B, NH, T, hs) = (4, 16, T, 64) float32:\n");
    bench(false);
    bench(true);
  }
  return failures != 0;
}
