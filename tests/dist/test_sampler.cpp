// tests/dist/test_sampler.cpp — DistributedSampler: disjoint, covering, equal length, seeded,
// reshuffled per epoch, PyTorch's padding and drop_last.
#include "helpers.hpp"
#include "nn/dist/dist.hpp"
#include "nn/sampler.hpp"

#include <algorithm>
#include <set>

using namespace tg;

TEST_CASE("sampler: ranks are disjoint, equal and cover the dataset (padded)", "[sampler]") {
  for (int64_t n : {int64_t(10), int64_t(11), int64_t(3), int64_t(1)}) {
    for (int W : {1, 2, 3, 4}) {
      std::multiset<int64_t> all;
      int64_t len = -1;
      for (int r = 0; r < W; ++r) {
        nn::DistributedSamplerOptions o;
        o.num_replicas = W;
        o.rank = r;
        o.seed = 5;
        nn::DistributedSampler s(n, o);
        s.set_epoch(3);
        auto idx = s.indices();
        if (len < 0) len = static_cast<int64_t>(idx.size());
        REQUIRE(static_cast<int64_t>(idx.size()) == len);
        REQUIRE(len == (n + W - 1) / W);
        all.insert(idx.begin(), idx.end());
      }
      std::set<int64_t> distinct(all.begin(), all.end());
      REQUIRE(static_cast<int64_t>(distinct.size()) == n);   // every example
      REQUIRE(static_cast<int64_t>(all.size()) == len * W);  // padding repeats the fewest
      REQUIRE(static_cast<int64_t>(all.size()) - n < W);
    }
  }
}

TEST_CASE("sampler: without shuffle, PyTorch's exact lists, and drop_last cuts", "[sampler]") {
  nn::DistributedSamplerOptions o;
  o.num_replicas = 3;
  o.shuffle = false;
  o.rank = 0;
  // torch: list(DistributedSampler(range(7), 3, 0, shuffle=False)) == [0, 3, 6]; rank 1: [1, 4, 0]
  REQUIRE(nn::DistributedSampler(7, o).indices() == std::vector<int64_t>{0, 3, 6});
  o.rank = 1;
  REQUIRE(nn::DistributedSampler(7, o).indices() == std::vector<int64_t>{1, 4, 0});
  o.rank = 2;
  REQUIRE(nn::DistributedSampler(7, o).indices() == std::vector<int64_t>{2, 5, 1});
  o.drop_last = true;
  REQUIRE(nn::DistributedSampler(7, o).indices() == std::vector<int64_t>{2, 5});
  o.rank = 3;
  REQUIRE_ERROR(nn::DistributedSampler(7, o),
                "invalid rank 3, rank should be in the interval [0, 2]");
}

TEST_CASE("sampler: the same seed and epoch give the same order, another epoch another",
          "[sampler]") {
  nn::DistributedSamplerOptions o;
  o.num_replicas = 2;
  o.rank = 1;
  o.seed = 42;
  nn::DistributedSampler a(100, o), b(100, o);
  a.set_epoch(1);
  b.set_epoch(1);
  REQUIRE(a.indices() == b.indices());
  b.set_epoch(2);
  REQUIRE(a.indices() != b.indices());
  // The default world comes from tg::dist.
  nn::DistributedSampler d(10);
  REQUIRE(d.num_replicas() == tg::dist::world_size());
  REQUIRE(d.rank() == tg::dist::rank());
}
