// tests/fixture_config.hpp — reading the PyTorch fixture directories' text files (config.txt with
// `key value` lines, index.txt with one name per line), shared by the parity tests.
#pragma once

#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace tgt {

// `key value` per line; the value is the rest of the line (may contain spaces).
inline std::map<std::string, std::string> read_config(const std::string& path) {
  std::map<std::string, std::string> cfg;
  std::ifstream f(path);
  INFO("fixture " << path);
  REQUIRE(f.good());
  for (std::string line; std::getline(f, line);) {
    auto sp = line.find(' ');
    cfg[line.substr(0, sp)] = sp == std::string::npos ? "" : line.substr(sp + 1);
  }
  return cfg;
}

// The non-empty lines of a file.
inline std::vector<std::string> read_lines(const std::string& path) {
  std::vector<std::string> out;
  std::ifstream f(path);
  for (std::string line; std::getline(f, line);)
    if (!line.empty()) out.push_back(line);
  return out;
}

// "a,b,c" -> {a, b, c}; "" -> {}.
inline std::vector<std::string> split(const std::string& s, char sep = ',') {
  std::vector<std::string> out;
  if (s.empty()) return out;
  size_t start = 0;
  for (size_t p; (p = s.find(sep, start)) != std::string::npos; start = p + 1)
    out.push_back(s.substr(start, p - start));
  out.push_back(s.substr(start));
  return out;
}

}  // namespace tgt
