// bench/bench_dist.cpp — data-parallel costs, run by bench/dist.sh under mpirun:
//   --mode allreduce  all-reduce (sum, float32) latency and bandwidth from 4 KB to 64 MB
//   --mode ddp        (--batch B, --bucket-mb M) one training step of the text classifier (default
//   model, batch B of 128
//                     tokens): one process without DDP against N ranks at batch B each, with the
//                     communication time, the part of it the end of backward waited for, and
//                     so the part hidden behind backward.
// Prints one line per row: "dist <name> <value> <unit> ..." (bench/dist.sh keeps them).
#include "nn/ddp.hpp"
#include "nn/dist/dist.hpp"
#include "text_classification/model.hpp"

#include <tapegrad.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

using namespace tg;
using Clock = std::chrono::steady_clock;

namespace {
double seconds(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void bench_allreduce() {
  const int W = dist::world_size();
  for (int64_t bytes = 4096; bytes <= (int64_t(64) << 20); bytes *= 4) {
    Tensor t = ones({bytes / 4});
    const int iters = bytes <= (1 << 20) ? 200 : 10;
    for (int i = 0; i < 3; ++i) dist::all_reduce(t);
    std::vector<double> times;
    for (int rep = 0; rep < 5; ++rep) {
      dist::barrier();
      auto t0 = Clock::now();
      for (int i = 0; i < iters; ++i) dist::all_reduce(t);
      times.push_back(seconds(t0) / iters);
    }
    const double s = median(times);
    // Bus bandwidth (NCCL's convention): the bytes each rank sends and receives in a ring.
    const double bus = 2.0 * (W - 1) / W * static_cast<double>(bytes) / s / 1e9;
    if (dist::rank() == 0)
      std::printf("dist allreduce %lld B: %.1f us, algbw %.3f GB/s, busbw %.3f GB/s\n",
                  static_cast<long long>(bytes), s * 1e6, bytes / s / 1e9, bus);
  }
}

void bench_ddp(int64_t batch, double bucket_mb) {
  const int W = dist::world_size();
  tgx::cls::ModelConfig cfg;
  cfg.vocab_size = 4000;
  cfg.num_classes = 2;
  cfg.dropout = 0.1;
  manual_seed(1);
  auto model = std::make_shared<tgx::cls::TextClassifier>(cfg);
  std::unique_ptr<nn::DistributedDataParallel> ddp;
  nn::DDPOptions o;
  o.bucket_cap_mb = bucket_mb;
  if (W > 1) ddp = std::make_unique<nn::DistributedDataParallel>(model, o);
  nn::AdamW opt(model->parameters(), nn::AdamWOptions(1e-3));
  const int64_t T = cfg.max_len;
  manual_seed(7 + static_cast<uint64_t>(dist::rank()));
  Tensor ids = randint(4, cfg.vocab_size, {batch, T});
  Tensor pad = zeros({batch, T}, kBool);
  Tensor y = randint(0, 2, {batch});
  auto step = [&] {
    opt.zero_grad();
    Tensor loss = cross_entropy(model->forward(ids, pad), y);
    loss.backward();
    opt.step();
  };
  for (int i = 0; i < 3; ++i) step();
  // No barrier inside the timed loop: the only collectives counted are DDP's own.
  const int steps = 20;
  if (W > 1) dist::barrier();
  if (ddp) ddp->reset_stats();
  dist::reset_stats();
  auto t0 = Clock::now();
  for (int i = 0; i < steps; ++i) step();
  const double s = seconds(t0) / steps;
  if (dist::rank() != 0) return;
  if (!ddp) {
    std::printf("dist ddp-step world 1 batch %lld: %.1f ms (no DDP)\n",
                static_cast<long long>(batch), s * 1e3);
    return;
  }
  const auto st = ddp->stats();
  const auto ds = dist::stats();
  const double comm = ds.comm_s / steps, waited = st.wait_s / steps;
  std::printf(
      "dist ddp-step world %d batch %lld: %.1f ms; %lld buckets, communication %.1f ms/step, "
      "waited at the end of backward %.1f ms/step (%.0f%% hidden behind backward), %lld "
      "collectives/step\n",
      W, static_cast<long long>(batch), s * 1e3, static_cast<long long>(ddp->num_buckets()),
      comm * 1e3, waited * 1e3, comm > 0 ? 100.0 * std::max(0.0, 1.0 - waited / comm) : 0.0,
      static_cast<long long>(ds.collectives / steps));
}
}  // namespace

int main(int argc, char** argv) {
  std::string mode = "allreduce";
  int64_t batch = 32;
  double bucket_mb = 25;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--mode")
      mode = argv[i + 1];
    else if (k == "--batch")
      batch = std::stoll(argv[i + 1]);
    else if (k == "--bucket-mb")
      bucket_mb = std::stod(argv[i + 1]);
    else {
      std::fprintf(stderr, "bench_dist: unknown option %s (--mode, --batch, --bucket-mb)\n",
                   k.c_str());
      return 2;
    }
  }
  if (batch < 1 || !(bucket_mb > 0)) {
    std::fprintf(stderr, "bench_dist: --batch must be >= 1 and --bucket-mb > 0\n");
    return 2;
  }
  if (dist::launched_by_mpirun()) dist::init();
  set_num_threads(1);
  if (mode == "allreduce") {
    if (dist::world_size() < 2) {
      std::printf("bench_dist --mode allreduce needs mpirun -np 2 or more\n");
      return 2;
    }
    bench_allreduce();
  } else if (mode == "ddp") {
    bench_ddp(batch, bucket_mb);
  } else {
    std::printf("bench_dist: --mode allreduce | ddp\n");
    return 2;
  }
  return 0;
}
