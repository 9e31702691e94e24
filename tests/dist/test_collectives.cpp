// tests/dist/test_collectives.cpp — tg::dist collectives on 2+ ranks against the single-process
// result: every dtype, odd and empty sizes, every reduce op, the handshake's error on mismatched
// shapes, and the object exchanges.
#include "helpers.hpp"
#include "nn/dist/dist.hpp"

using namespace tg;
namespace td = tg::dist;

namespace {
// The value rank r holds at element i (a different one per rank, exact in every dtype).
double value(int r, int64_t i) { return static_cast<double>((r + 1) * 10 + (i % 7) - 3); }
Tensor rank_tensor(int r, Shape shape, DType dt) {
  Tensor t = zeros(shape, kFloat64);
  double* p = t.data<double>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = value(r, i);
  return t.to(dt);
}
}  // namespace

TEST_CASE("dist: world", "[collectives]") {
  REQUIRE(td::is_initialized());
  REQUIRE(td::world_size() >= 2);
  REQUIRE(td::rank() >= 0);
  REQUIRE(td::rank() < td::world_size());
  REQUIRE(td::local_rank() < td::local_world_size());
}

TEST_CASE("dist: all_reduce sum/avg/max/min in every dtype, odd and empty sizes", "[collectives]") {
  const int W = td::world_size(), R = td::rank();
  for (DType dt : {kFloat32, kFloat64, kInt64}) {
    for (int64_t n : {int64_t(0), int64_t(1), int64_t(7), int64_t(1001)}) {
      for (td::ReduceOp op :
           {td::ReduceOp::Sum, td::ReduceOp::Avg, td::ReduceOp::Max, td::ReduceOp::Min}) {
        if (op == td::ReduceOp::Avg && dt == kInt64) continue;
        Tensor t = rank_tensor(R, {n}, dt);
        td::all_reduce(t, op);
        std::vector<double> got = t.to(kFloat64).to_vector<double>();
        for (int64_t i = 0; i < n; ++i) {
          double want = op == td::ReduceOp::Max ? -1e300 : op == td::ReduceOp::Min ? 1e300 : 0;
          for (int r = 0; r < W; ++r) {
            const double v = value(r, i);
            if (op == td::ReduceOp::Max)
              want = std::max(want, v);
            else if (op == td::ReduceOp::Min)
              want = std::min(want, v);
            else
              want += v;
          }
          if (op == td::ReduceOp::Avg) want /= W;
          INFO(dtype_name(dt) << " n=" << n << " op=" << td::reduce_op_name(op) << " i=" << i);
          REQUIRE(got[i] == Approx(want).epsilon(1e-7));
        }
      }
    }
  }
  // A 2-d tensor keeps its shape.
  Tensor m = rank_tensor(R, {3, 5}, kFloat64);
  td::all_reduce(m);
  REQUIRE(m.shape() == Shape{3, 5});
}

TEST_CASE("dist: all_reduce on bool is or (sum, max) and and (min)", "[collectives]") {
  const int R = td::rank();
  // Element 0: true on rank 0 only; element 1: true everywhere; element 2: false everywhere.
  Tensor a = tensor(std::vector<bool>{R == 0, true, false});
  Tensor b = a.clone();
  td::all_reduce(a, td::ReduceOp::Sum);
  td::all_reduce(b, td::ReduceOp::Min);
  REQUIRE(a.to_vector<int64_t>() == std::vector<int64_t>{1, 1, 0});
  REQUIRE(b.to_vector<int64_t>() == std::vector<int64_t>{0, 1, 0});
  Tensor c = tensor(std::vector<bool>{true});
  REQUIRE_ERROR(td::all_reduce(c, td::ReduceOp::Avg), "avg needs a floating tensor");
}

TEST_CASE("dist: broadcast from every root, every dtype", "[collectives]") {
  const int W = td::world_size(), R = td::rank();
  for (int root = 0; root < W; ++root)
    for (DType dt : {kFloat32, kFloat64, kInt64, kBool}) {
      Tensor t = rank_tensor(R, {2, 3}, dt);
      td::broadcast(t, root);
      REQUIRE(t.to(kFloat64).to_vector<double>() ==
              rank_tensor(root, {2, 3}, dt).to(kFloat64).to_vector<double>());
    }
  Tensor e = zeros({0});
  td::broadcast(e, 0);
  REQUIRE(e.numel() == 0);
  Tensor t = zeros({2});
  REQUIRE_ERROR(td::broadcast(t, W), "is not a rank");
}

TEST_CASE("dist: all_gather and reduce_scatter against the single-process result",
          "[collectives]") {
  const int W = td::world_size(), R = td::rank();
  for (DType dt : {kFloat32, kFloat64, kInt64, kBool}) {
    for (int64_t n : {int64_t(0), int64_t(1), int64_t(5)}) {
      Tensor in = rank_tensor(R, {n, 2}, dt);
      std::vector<Tensor> parts = td::all_gather(in);
      REQUIRE(static_cast<int>(parts.size()) == W);
      for (int r = 0; r < W; ++r) {
        REQUIRE(parts[r].shape() == Shape{n, 2});
        REQUIRE(parts[r].to(kFloat64).to_vector<double>() ==
                rank_tensor(r, {n, 2}, dt).to(kFloat64).to_vector<double>());
      }
      Tensor out = zeros({W * n, 2}, dt);
      td::all_gather_into_tensor(out, in);
      REQUIRE(out.to(kFloat64).narrow(0, R * n, n).to_vector<double>() ==
              in.to(kFloat64).to_vector<double>());
    }
  }
  for (DType dt : {kFloat32, kFloat64, kInt64}) {
    for (int64_t n : {int64_t(0), int64_t(3)}) {
      Tensor in = rank_tensor(R, {W * n}, dt);
      Tensor out = zeros({n}, dt);
      td::reduce_scatter_tensor(out, in, td::ReduceOp::Sum);
      std::vector<double> got = out.to(kFloat64).to_vector<double>();
      for (int64_t i = 0; i < n; ++i) {
        double want = 0;
        for (int r = 0; r < W; ++r) want += value(r, R * n + i);
        REQUIRE(got[i] == want);
      }
    }
  }
  Tensor in = zeros({5});
  Tensor out = zeros({2});
  REQUIRE_ERROR(td::reduce_scatter_tensor(out, in), "must hold");
  REQUIRE_ERROR(td::all_gather_into_tensor(in, out), "must hold");
}

TEST_CASE("dist: mismatched shapes across ranks are an error on every rank, not a hang",
          "[collectives]") {
  const int R = td::rank();
  Tensor t = zeros({R == 0 ? 4 : 5, 3});
  REQUIRE_ERROR(td::all_reduce(t), "rank 0: #");
  Tensor u = zeros({3}, R == 0 ? kFloat32 : kFloat64);
  try {
    td::all_reduce(u);
    FAIL("no error");
  } catch (const Error& e) {
    const std::string msg = e.what();
    REQUIRE_THAT(msg, Catch::Contains("all_reduce(sum) float32 (3)"));
    REQUIRE_THAT(msg, Catch::Contains("all_reduce(sum) float64 (3)"));
    REQUIRE_THAT(msg, Catch::Contains("rank 1:"));
  }
  // The world is usable afterwards.
  Tensor v = ones({2});
  td::all_reduce(v);
  REQUIRE(v.to_vector<double>() == std::vector<double>(2, td::world_size()));
}

TEST_CASE("dist: async work overlaps and completes in issue order", "[collectives]") {
  const int W = td::world_size();
  std::vector<Tensor> ts;
  std::vector<td::Work> works;
  for (int k = 0; k < 8; ++k) {
    ts.push_back(full({1000 + k}, k, kFloat64));
    works.push_back(td::all_reduce_async(ts.back(), td::ReduceOp::Sum));
  }
  for (auto& w : works) w.wait();
  for (int k = 0; k < 8; ++k) {
    REQUIRE(works[k].completed());
    REQUIRE(ts[k].to_vector<double>() == std::vector<double>(1000 + k, double(k) * W));
  }
  td::Work none;
  none.wait();
  REQUIRE(none.completed());
}

TEST_CASE("dist: objects and barrier", "[collectives]") {
  const int W = td::world_size(), R = td::rank();
  std::vector<std::string> all = td::all_gather_object(std::string(R + 1, 'a' + R));
  REQUIRE(static_cast<int>(all.size()) == W);
  for (int r = 0; r < W; ++r) REQUIRE(all[r] == std::string(r + 1, 'a' + r));
  REQUIRE(td::broadcast_object(R == 0 ? "from zero" : "other", 0) == "from zero");
  REQUIRE(td::broadcast_object("", 0).empty());
  td::barrier();
}

TEST_CASE("dist: collectives refuse tensors that are part of a graph", "[collectives]") {
  Tensor x = ones({2}).requires_grad_();
  Tensor y = x * 2.0;
  REQUIRE_ERROR(td::all_reduce(y), "part of a graph");
}
