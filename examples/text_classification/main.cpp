// examples/text_classification/main.cpp — the text_classification program: everything lives in
// the tgx_text_classification library (app.hpp); main only forwards the arguments.
#include "autograd/openmp_wait.hpp"
#include "common/cli.hpp"
#include "text_classification/app.hpp"

#include <string>
#include <vector>

int main(int argc, char** argv) {
  tg::passive_openmp_wait(argv);  // idle OpenMP threads sleep (openmp_wait.hpp says why)
  std::vector<std::string> args(argv + 1, argv + argc);
  return tgx::run_main("text_classification", [&] { return tgx::cls::run(args); });
}
