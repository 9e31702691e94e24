// tests/ops/test_cpu_embedding.cpp — the embedding kernels of ops/index/cpu/embedding.cpp against raw
// loops: the row gather and the index_add with repeated indices and a padding row, float64 and
// float32, C = 0 / 1 / odd / wider than one backward slice, no indices; the same bits at 1 and 3
// threads.
#include "helpers.hpp"

#include "ops/core/cpu/kernels.hpp"

#include <random>

using namespace tg;

namespace {
template <typename T>
void check(int64_t V, int64_t C, int64_t n, int64_t pad) {
  INFO((sizeof(T) == 4 ? "float32" : "float64")
       << " V " << V << " C " << C << " n " << n << " pad " << pad);
  std::mt19937 rng(static_cast<unsigned>(V * 31 + C * 7 + n));
  std::normal_distribution<double> nd;
  std::vector<T> w(V * C), g(n * C), out(n * C, T(-1)), dw(V * C, T(0));
  for (T& v : w) v = static_cast<T>(nd(rng));
  for (T& v : g) v = static_cast<T>(nd(rng));
  std::vector<int64_t> idx(n);
  for (int64_t k = 0; k < n; ++k)
    idx[k] = k % 3 == 0 ? idx[k / 2] : static_cast<int64_t>(rng() % V);
  cpu::embedding_forward<T>(out.data(), w.data(), idx.data(), n, C);
  for (int64_t k = 0; k < n; ++k)
    for (int64_t c = 0; c < C; ++c) REQUIRE(out[k * C + c] == w[idx[k] * C + c]);
  cpu::embedding_backward<T>(dw.data(), g.data(), idx.data(), n, C, pad);
  std::vector<T> want(V * C, T(0));
  for (int64_t k = 0; k < n; ++k)
    for (int64_t c = 0; c < C && idx[k] != pad; ++c) want[idx[k] * C + c] += g[k * C + c];
  REQUIRE(dw == want);  // the same additions in the same order: equal bits
}
}  // namespace

TEST_CASE("cpu embedding kernels match raw loops", "[embedding][cpu]") {
  for (int64_t C : {int64_t(0), int64_t(1), int64_t(5), int64_t(64), int64_t(600)})
    for (int64_t n : {int64_t(0), int64_t(1), int64_t(40)})
      for (int64_t pad : {int64_t(-1), int64_t(2)}) {
        check<double>(7, C, n, pad);
        check<float>(7, C, n, pad);
      }
}

TEST_CASE("cpu embedding kernels give the same bits at 1 and 3 threads", "[embedding][cpu]") {
  const int saved = get_num_threads();
  const int64_t V = 50, C = 700, n = 300;
  std::mt19937 rng(4);
  std::normal_distribution<float> nd;
  std::vector<float> w(V * C), g(n * C);
  for (float& v : w) v = nd(rng);
  for (float& v : g) v = nd(rng);
  std::vector<int64_t> idx(n);
  for (int64_t& i : idx) i = static_cast<int64_t>(rng() % V);
  auto run = [&](int threads) {
    set_num_threads(threads);
    std::vector<float> out(n * C), dw(V * C, 0.f);
    cpu::embedding_forward<float>(out.data(), w.data(), idx.data(), n, C);
    cpu::embedding_backward<float>(dw.data(), g.data(), idx.data(), n, C, 3);
    out.insert(out.end(), dw.begin(), dw.end());
    return out;
  };
  REQUIRE(run(1) == run(3));
  set_num_threads(saved);
}
