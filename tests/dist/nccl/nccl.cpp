// tests/dist/nccl/nccl.cpp — tg::dist on CUDA tensors (NCCL), world size 1 on one GPU: every
// collective against the CPU result, and 3 DDP steps of a CUDA model against the same steps on
// the CPU. Exits 77 (ctest: skipped) when the build has no NCCL or the machine no GPU; never
// passes without running.
#include "nn/ddp.hpp"
#include "nn/dist/dist.hpp"

#include <tapegrad.hpp>

#include <cmath>
#include <cstdio>

using namespace tg;

namespace {
int failures = 0;
void check(bool ok, const char* what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAILED", what);
  if (!ok) ++failures;
}
double max_diff(const Tensor& a, const Tensor& b) {
  auto x = a.cpu().to(kFloat64).to_vector<double>(), y = b.cpu().to(kFloat64).to_vector<double>();
  if (x.size() != y.size()) return INFINITY;
  double m = 0;
  for (size_t i = 0; i < x.size(); ++i) m = std::max(m, std::fabs(x[i] - y[i]));
  return m;
}
}  // namespace

int main() {
  if (!dist::built_with_nccl()) {
    std::printf("skipped: this build has no NCCL\n");
    return 77;
  }
  if (cuda_device_count() == 0) {
    std::printf("skipped: no GPU\n");
    return 77;
  }
  dist::init();
  const Device gpu = cuda_device(0);
  for (DType dt : {kFloat32, kFloat64, kInt64}) {
    Tensor c = arange(0, 10, 1, kInt64).to(dt);
    Tensor g = c.to(gpu);
    dist::all_reduce(g, dist::ReduceOp::Sum);
    check(max_diff(g, c) == 0, "all_reduce sum (world 1) leaves the values");
    dist::broadcast(g, 0);
    check(max_diff(g, c) == 0, "broadcast");
    Tensor out = zeros({10}, dt, gpu);
    dist::all_gather_into_tensor(out, g);
    check(max_diff(out, c) == 0, "all_gather");
    Tensor rs = zeros({10}, dt, gpu);
    dist::reduce_scatter_tensor(rs, g, dist::ReduceOp::Sum);
    check(max_diff(rs, c) == 0, "reduce_scatter");
  }
  Tensor f = full({7}, 3.0, kFloat32, gpu);
  dist::all_reduce(f, dist::ReduceOp::Avg);
  check(max_diff(f, full({7}, 3.0)) == 0, "all_reduce avg");

  // DDP on the GPU against the CPU: 3 AdamW steps of a Linear.
  auto run = [&](Device dev) {
    manual_seed(5);
    auto net = std::make_shared<nn::Linear>(16, 4);
    net->to(dev);
    nn::DistributedDataParallel ddp(net);
    nn::AdamW opt(net->parameters(), nn::AdamWOptions(1e-2));
    for (int s = 0; s < 3; ++s) {
      manual_seed(100 + static_cast<uint64_t>(s));
      Tensor x = randn({8, 16}).to(dev);
      opt.zero_grad();
      (*net)(x).pow(2.0).mean().backward();
      opt.step();
    }
    return net->weight.detach().cpu();
  };
  const double d = max_diff(run(gpu), run(kCPU));
  std::printf("DDP on cuda:0 vs CPU after 3 steps: max |diff| = %g\n", d);
  check(d < 1e-5, "DDP step on the GPU matches the CPU (float32)");
  dist::finalize();
  return failures == 0 ? 0 : 1;
}
