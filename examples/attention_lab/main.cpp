// examples/attention_lab/main.cpp — the attention_lab program: see lab.hpp and --help.
#include "attention_lab/lab.hpp"
#include "common/cli.hpp"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return tgx::run_main("attention_lab", [&] { return tgx::lab::run(args); });
}
