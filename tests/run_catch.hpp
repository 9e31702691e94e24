// tests/run_catch.hpp — runs the Catch2 session on the command line: the test cases it selects,
// its reporter; returns the number of failed cases (or the command line's error code).
// Implemented in tests/catch_impl.cpp.
#pragma once

namespace tg_test {
int run_catch(int argc, char** argv);
}  // namespace tg_test
