// tests/examples/gpt/test_precision.cpp — --precision on the gpt program (both archs): the seeded
// tiny run in bf16 and f16 completes, records its precision, and its losses are finite and close
// to the f32 run's; a run saved in bf16 and resumed in f32 says so and continues.
#include <catch2/catch.hpp>

#include "common/text.hpp"
#include "gpt/app.hpp"
#include "nn/checkpoint.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <numeric>
#include <unistd.h>

using Catch::Matchers::Contains;

namespace {

const std::string kFix = std::string(TG_FIXTURES) + "/examples/gpt/fortunes";

std::string fresh_dir(const std::string& name) {
  std::string dir = std::string(TG_BINARY_DIR) + "/test-gpt-precision/" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::vector<std::string> tiny(const std::string& out, const std::vector<std::string>& more) {
  std::vector<std::string> a = {
      "--data-dir", kFix,    "--block",      "32", "--d-model",      "32", "--layers",  "2",
      "--heads",    "2",     "--batch-size", "8",  "--steps",        "40", "--warmup",  "5",
      "--lr",       "0.005", "--eval-every", "10", "--eval-windows", "8",  "--samples", "1",
      "--length",   "20",    "--out",        out};
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

nlohmann::json read_json(const std::string& path) {
  return nlohmann::json::parse(tgx::read_file(path));
}

double mean(const std::vector<double>& v, size_t from, size_t to) {
  return std::accumulate(v.begin() + from, v.begin() + to, 0.0) / double(to - from);
}

// What body() prints on stdout.
std::string capture_stdout(const std::function<void()>& body) {
  const std::string path = std::string(TG_BINARY_DIR) + "/test-gpt-precision/stdout.txt";
  std::fflush(stdout);
  const int saved = dup(1);
  FILE* f = std::fopen(path.c_str(), "w");
  dup2(fileno(f), 1);
  body();
  std::fflush(stdout);
  dup2(saved, 1);
  close(saved);
  std::fclose(f);
  return tgx::read_file(path);
}

}  // namespace

// Bound: the mean of the last 10 training losses and the held-out loss within 0.05 nats of f32's
// (the losses fall from about 4.5 to 3.0 nats here; bf16 measured within 0.015). f16's scaler
// starts at PyTorch's 2^16 and skips the first steps whose scaled gradients overflow (at most 8:
// each halves the scale); a run that skipped k of its 40 steps trains k steps less, so its bound
// is 0.15 nats then (the gpt arch skips 4 here and ends within 0.09).
TEST_CASE("gpt: bf16 and f16 runs complete, record their precision, match f32", "[gpt]") {
  for (const char* arch : {"gpt", "llama"}) {
    DYNAMIC_SECTION("--arch " << arch) {
      const std::string base = fresh_dir(std::string(arch) + "-f32");
      REQUIRE(tgx::gpt::run(tiny(base, {"--arch", arch, "--quiet"})) == 0);
      const nlohmann::json m32 = read_json(base + "/metrics.json");
      CHECK(m32["precision"] == "f32");
      const auto l32 = m32["history"]["loss"].get<std::vector<double>>();
      for (const char* p : {"bf16", "f16"}) {
        const std::string out = fresh_dir(std::string(arch) + "-" + p);
        REQUIRE(tgx::gpt::run(tiny(out, {"--arch", arch, "--quiet", "--precision", p})) == 0);
        const nlohmann::json m = read_json(out + "/metrics.json");
        CHECK(m["precision"] == p);
        CHECK(m["training"]["precision"] == p);
        const int64_t skipped = m["skipped_steps"].get<int64_t>();
        CHECK(skipped >= 0);
        CHECK(skipped <= (std::string(p) == "f16" ? 8 : 0));
        const double bound = skipped > 0 ? 0.15 : 0.05;
        const auto l = m["history"]["loss"].get<std::vector<double>>();
        REQUIRE(l.size() == 40);
        for (double v : l) CHECK(std::isfinite(v));
        INFO(p << ": last losses " << mean(l, 30, 40) << " vs f32 " << mean(l32, 30, 40));
        CHECK(std::abs(mean(l, 30, 40) - mean(l32, 30, 40)) < bound);
        CHECK(std::abs(m["heldout_nats_per_char"].get<double>() -
                       m32["heldout_nats_per_char"].get<double>()) < bound);
        // Checkpoints stay float32 master weights and name the precision that wrote them.
        const auto ck = tg::nn::load_safetensors(out + "/last/model.safetensors");
        CHECK(ck.metadata.at("precision") == p);
        for (const auto& [name, t] : ck.tensors) CHECK(t.dtype() == tg::kFloat32);
      }
    }
  }
}

TEST_CASE("gpt: a run saved in bf16 and resumed in f32 says so and continues", "[gpt]") {
  const std::string out = fresh_dir("resume");
  REQUIRE(tgx::gpt::run(tiny(out, {"--quiet", "--precision", "bf16", "--max-steps", "20"})) == 0);
  CHECK(read_json(out + "/metrics.json")["precision"] == "bf16");
  const std::string said =
      capture_stdout([&] { REQUIRE(tgx::gpt::run(tiny(out, {"--resume"})) == 0); });
  CHECK_THAT(said, Contains("--resume: " + out +
                            "/last was saved by a bf16 run; it continues "
                            "in f32"));
  const nlohmann::json m = read_json(out + "/metrics.json");
  CHECK(m["steps_done"] == 40);
  CHECK(m["precision"] == "f32");
  // The same run resumed in its own precision prints no such line.
  const std::string same = fresh_dir("resume-same");
  REQUIRE(tgx::gpt::run(tiny(same, {"--quiet", "--precision", "bf16", "--max-steps", "20"})) == 0);
  const std::string quiet = capture_stdout([&] {
    REQUIRE(tgx::gpt::run(tiny(same, {"--resume", "--precision", "bf16"})) == 0);
  });
  CHECK_THAT(quiet, !Contains("was saved by"));
  CHECK_THAT(quiet, Contains("precision bf16"));
  REQUIRE_THROWS_WITH(tgx::gpt::run(tiny(fresh_dir("bad"), {"--precision", "fp8"})),
                      Contains("--precision fp8: unknown precision (allowed: f32, bf16, f16)"));
}
