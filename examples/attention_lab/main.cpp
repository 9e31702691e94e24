// examples/attention_lab/main.cpp — the attention_lab program: see lab.hpp and --help.
#include "autograd/openmp_wait.hpp"
#include "attention_lab/lab.hpp"
#include "common/cli.hpp"

int main(int argc, char** argv) {
  tg::passive_openmp_wait(argv);  // idle OpenMP threads sleep (openmp_wait.hpp says why)
  std::vector<std::string> args(argv + 1, argv + argc);
  return tgx::run_main("attention_lab", [&] { return tgx::lab::run(args); });
}
