// tests/dist/fault/fault.cpp — a DDP training loop in which rank 1 fails at step 3: killed by
// SIGKILL (--mode kill), throwing an uncaught exception (--mode throw), or hanging (--mode hang).
// run_fault.cmake runs it under mpirun and checks the whole job ends non-zero, with a message,
// within a bounded time (no rank waits forever).
#include "nn/ddp.hpp"
#include "nn/dist/dist.hpp"

#include <tapegrad.hpp>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <string>
#include <thread>

using namespace tg;

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "kill";
  dist::init();
  manual_seed(1);
  auto net = std::make_shared<nn::Linear>(64, 64);
  nn::DistributedDataParallel ddp(net);
  nn::AdamW opt(net->parameters());
  for (int step = 0; step < 1000; ++step) {
    if (step == 3 && dist::rank() == 1) {
      std::fprintf(stderr, "fault: rank 1 fails now (%s)\n", mode.c_str());
      std::fflush(stderr);
      if (mode == "kill") std::raise(SIGKILL);
      if (mode == "throw") throw Error("injected failure on rank 1");
      if (mode == "hang") std::this_thread::sleep_for(std::chrono::hours(1));
    }
    opt.zero_grad();
    Tensor x = randn({8, 64});
    (*net)(x).pow(2.0).mean().backward();
    opt.step();
  }
  std::printf("fault: finished without a failure\n");
  return 0;
}
