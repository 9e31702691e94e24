// tests/main.cpp — the plain main of the single-process suites (Catch2's implementation:
// tests/catch_impl.cpp).
#include "run_catch.hpp"

int main(int argc, char** argv) { return tg_test::run_catch(argc, argv); }
