// tests/catch_impl.cpp — Catch2's implementation, compiled once for every test executable, and
// tg_test::run_catch, the one call each main makes (tests/main.cpp, tests/cuda/main_cuda.cpp,
// tests/dist/main_dist.cpp): Catch declares its Session only beside the implementation. Built
// without the sanitizers and without debug info (tests/CMakeLists.txt): it is the framework, not
// the code under test, and it was the slowest object of the sanitizer build.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "run_catch.hpp"

namespace tg_test {
int run_catch(int argc, char** argv) { return Catch::Session().run(argc, argv); }
}  // namespace tg_test
