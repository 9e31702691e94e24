// examples/finetune/main.cpp — the finetune program: see app.hpp and --help.
#include "autograd/openmp_wait.hpp"
#include "common/cli.hpp"
#include "finetune/app.hpp"

int main(int argc, char** argv) {
  tg::passive_openmp_wait(argv);  // idle OpenMP threads sleep (openmp_wait.hpp says why)
  std::vector<std::string> args(argv + 1, argv + argc);
  return tgx::run_main("finetune", [&] { return tgx::finetune::run(args); });
}
