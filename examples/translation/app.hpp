// examples/translation/app.hpp — the `translation` program as a library entry point, so tests
// drive it without a subprocess: run({"--steps", "20", ...}) parses the options, trains (or,
// with --translate, loads the best checkpoint and translates one sentence) and returns the exit
// code; bad input throws tgx::UserError (main() turns it into a message through run_main).
// Every option is checked before the data is made; training refuses an --out that holds a run
// unless --resume or --overwrite; --translate refuses the options it does not use and, under
// mpirun, runs on rank 0 alone; data-parallel ranks must be given the same options.
//
// Not here: the pieces it wires together (data, vocab, model, decode, train, plots).
#pragma once

#include <string>
#include <vector>

namespace tgx::translation {

// args without the program name. Returns 0 on success.
int run(const std::vector<std::string>& args);

}  // namespace tgx::translation
