// examples/gpt/main.cpp — the `gpt` program: everything is in the library (app.hpp); main only
// hands argv over through tgx::run_main.
#include "common/cli.hpp"
#include "gpt/app.hpp"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return tgx::run_main("gpt", [&] { return tgx::gpt::run(args); });
}
