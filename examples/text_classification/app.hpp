// examples/text_classification/app.hpp — the program's entry point as a library function, so
// tests drive it without a subprocess: options -> train (default), --predict and/or --explain
// (both run when both are given; options they do not use are refused; under mpirun rank 0 alone
// answers), or --help. Training refuses an --out that holds a run unless --resume or
// --overwrite; under mpirun every rank must be given the same options.
// Deliberately not here: main() (main.cpp wraps run() in tgx::run_main).
#pragma once

#include <string>
#include <vector>

namespace tgx::cls {

// args excludes the program name. Returns the exit code; bad input throws tgx::UserError.
int run(const std::vector<std::string>& args);

}  // namespace tgx::cls
