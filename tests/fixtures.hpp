// tests/fixtures.hpp — the one reader of the PyTorch reference fixtures: every case is one
// tests/fixtures/<family>/<case>.safetensors (written by tools/fixture_io.py for the
// tools/make_*fixtures*.py generators), its tensors under their names (x, out, dout, dx, ...)
// and its configuration as the string -> string __metadata__, read with the library's own
// tg::nn::load_safetensors.
//   tgt::Fixture f("mha/add_bias_kv");
//   Tensor x = f.tensor("x");  std::string v = f.meta("key");  bool has = f.has("dx");
// A missing file, tensor or key fails the test, naming the file and the name (a lookup that
// succeeds is not an assertion, so a test's count is that of its comparisons). tensor()
// returns a fresh copy every call, so a test may change what it gets. Families whose cases
// carry an "index" key (the case names in the generator's order, e.g. mha, transformer) are
// listed by fixture_index(family), which checks the directory holds exactly those files.
// Not here: tests/fixtures/safetensors/ (files that test the reader itself) and the text fixtures.
#pragma once

#include <catch2/catch.hpp>

#include "nn/checkpoint.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tgt {

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

// TG_FIXTURES/<id>.safetensors for id = "family/case".
inline std::string fixture_path(const std::string& id) {
  return std::string(TG_FIXTURES) + "/" + id + ".safetensors";
}

class Fixture {
 public:
  explicit Fixture(const std::string& id) : path_(fixture_path(id)), file_(load(path_)) {}

  const std::string& path() const { return path_; }
  bool has(const std::string& name) const { return file_->tensors.contains(name); }
  tg::Tensor tensor(const std::string& name) const {
    if (!has(name)) FAIL("fixture " << path_ << ": no tensor \"" << name << "\"");
    return file_->tensors.at(name).clone();
  }
  const tg::nn::StateDict& tensors() const { return file_->tensors; }

  bool has_meta(const std::string& key) const { return file_->metadata.count(key) != 0; }
  const std::string& meta(const std::string& key) const {
    if (!has_meta(key)) FAIL("fixture " << path_ << ": no metadata key \"" << key << "\"");
    return file_->metadata.at(key);
  }
  std::vector<std::string> meta_list(const std::string& key) const { return split(meta(key)); }
  const tg::nn::Metadata& metadata() const { return file_->metadata; }

 private:
  // Parsed once per process: the parity tests open one case many times.
  static std::shared_ptr<const tg::nn::SafetensorsFile> load(const std::string& path) {
    static std::map<std::string, std::shared_ptr<const tg::nn::SafetensorsFile>> cache;
    auto it = cache.find(path);
    if (it != cache.end()) return it->second;
    if (!std::filesystem::is_regular_file(path)) FAIL("fixture " << path << ": no such file");
    std::shared_ptr<const tg::nn::SafetensorsFile> f;
    try {
      f = std::make_shared<const tg::nn::SafetensorsFile>(tg::nn::load_safetensors(path));
    } catch (const tg::Error& e) {
      FAIL(e.what());
    }
    return cache[path] = f;
  }

  std::string path_;
  std::shared_ptr<const tg::nn::SafetensorsFile> file_;
};

// The cases of a family in the order of their "index" metadata; the directory must hold exactly
// those <case>.safetensors files (a lost or stray file fails here, not silently).
inline std::vector<std::string> fixture_index(const std::string& family) {
  const std::filesystem::path dir = std::string(TG_FIXTURES) + "/" + family;
  std::vector<std::string> on_disk;
  INFO("fixture family " << dir.string());
  REQUIRE(std::filesystem::is_directory(dir));
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".safetensors") on_disk.push_back(e.path().stem().string());
  REQUIRE_FALSE(on_disk.empty());
  std::sort(on_disk.begin(), on_disk.end());
  std::vector<std::string> index = Fixture(family + "/" + on_disk.front()).meta_list("index");
  std::vector<std::string> sorted = index;
  std::sort(sorted.begin(), sorted.end());
  INFO("index: " << Fixture(family + "/" + on_disk.front()).meta("index"));
  REQUIRE(sorted == on_disk);
  return index;
}

}  // namespace tgt
