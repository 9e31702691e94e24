// tests/main.cpp — the Catch2 main, compiled once and linked into every suite.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
