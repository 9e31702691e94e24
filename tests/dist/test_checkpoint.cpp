// tests/dist/test_checkpoint.cpp — a ZeRO-1 checkpoint written at 2 ranks resumes at 1 rank, and
// one written at 1 rank resumes at 2, with the same weights after 5 more steps (<= 1e-12) as the
// run that never stopped. Four ctest entries in order: [ckpt_save2] -> [ckpt_resume1] and
// [ckpt_save1] -> [ckpt_resume2] (tests/CMakeLists.txt ties them with fixtures).
#include "model.hpp"

#include <filesystem>

using namespace tdt;
namespace td = tg::dist;
namespace fs = std::filesystem;

namespace {
const std::string kRoot = std::string(TG_BINARY_DIR) + "/dist-checkpoint-test";

// Steps [s0, s1) of the 2-micro-batch-per-step run: at world 2 rank r takes micro-batch r; at
// world 1 the one rank accumulates micro-batches 0 and 1 (no_sync on the first).
void train(nn::DistributedDataParallel& ddp, nn::Optimizer& opt, TinyNet& net, int64_t s0,
           int64_t s1) {
  const int W = td::world_size(), R = td::rank();
  for (int64_t s = s0; s < s1; ++s) {
    opt.zero_grad();
    if (W == 2) {
      auto [x, y] = batch(s, R);
      net.loss(x, y).backward();
    } else {
      {
        auto guard = ddp.no_sync();
        auto [x, y] = batch(s, 0);
        (net.loss(x, y) * 0.5).backward();
      }
      auto [x, y] = batch(s, 1);
      (net.loss(x, y) * 0.5).backward();
    }
    opt.step();
  }
}

struct Run {
  std::shared_ptr<TinyNet> net;
  std::unique_ptr<nn::DistributedDataParallel> ddp;
  std::unique_ptr<nn::ZeroRedundancyAdamW> opt;
  explicit Run(uint64_t seed) : net(make_net(seed)) {
    nn::DDPOptions o;
    o.zero1 = true;
    o.bucket_cap_mb = 0.001;
    ddp = std::make_unique<nn::DistributedDataParallel>(net, o);
    opt = std::make_unique<nn::ZeroRedundancyAdamW>(*ddp, groups(*net), adamw());
  }
};

void save_then_finish(const std::string& name) {
  const std::string dir = kRoot + "/" + name;
  if (td::rank() == 0) fs::remove_all(dir);
  td::barrier();
  Run run(1);
  train(*run.ddp, *run.opt, *run.net, 0, 5);
  nn::save_checkpoint_distributed(dir + "/ckpt", *run.net, *run.opt, nullptr, 5);
  train(*run.ddp, *run.opt, *run.net, 5, 10);
  if (td::rank() == 0) save_npy(dir + "/final.npy", tensor(flat_params(*run.net)));
  td::barrier();
}

void resume_and_compare(const std::string& name, int saved_world) {
  const std::string dir = kRoot + "/" + name;
  REQUIRE(fs::exists(dir + "/final.npy"));
  Run run(77);  // other weights: the checkpoint must replace them
  nn::CheckpointInfo info =
      nn::load_checkpoint_distributed(dir + "/ckpt", *run.net, *run.opt, nullptr);
  REQUIRE(info.step == 5);
  REQUIRE(info.extra.at("dist.world_size") == std::to_string(saved_world));
  train(*run.ddp, *run.opt, *run.net, 5, 10);
  const std::vector<double> want = load_npy(dir + "/final.npy").to_vector<double>();
  const double d = max_abs_diff(flat_params(*run.net), want);
  INFO("max |resumed - uninterrupted| = " << d);
  REQUIRE(d <= 1e-12);
}
}  // namespace

TEST_CASE("checkpoint: save at 2 ranks (ZeRO-1), finish the run", "[ckpt_save2]") {
  REQUIRE(td::world_size() == 2);
  save_then_finish("from2");
}
TEST_CASE("checkpoint: resume the 2-rank checkpoint at 1 rank", "[ckpt_resume1]") {
  REQUIRE(td::world_size() == 1);
  resume_and_compare("from2", 2);
}
TEST_CASE("checkpoint: save at 1 rank (ZeRO-1), finish the run", "[ckpt_save1]") {
  REQUIRE(td::world_size() == 1);
  save_then_finish("from1");
}
TEST_CASE("checkpoint: resume the 1-rank checkpoint at 2 ranks", "[ckpt_resume2]") {
  REQUIRE(td::world_size() == 2);
  resume_and_compare("from1", 1);
}
