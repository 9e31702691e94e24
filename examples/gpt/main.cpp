// examples/gpt/main.cpp — the `gpt` program: everything is in the library (app.hpp); main only
// hands argv over through tgx::run_main.
#include "autograd/openmp_wait.hpp"
#include "common/cli.hpp"
#include "gpt/app.hpp"

int main(int argc, char** argv) {
  tg::passive_openmp_wait(argv);  // idle OpenMP threads sleep (openmp_wait.hpp says why)
  std::vector<std::string> args(argv + 1, argv + argc);
  return tgx::run_main("gpt", [&] { return tgx::gpt::run(args); });
}
