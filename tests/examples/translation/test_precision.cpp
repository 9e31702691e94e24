// tests/examples/translation/test_precision.cpp — --precision on the translator: the seeded tiny
// run in bf16 and f16 completes, records its precision, and its losses are finite and close to
// the f32 run's; a run resumed in another precision continues.
#include <catch2/catch.hpp>

#include "common/text.hpp"
#include "nn/checkpoint.hpp"
#include "translation/app.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>

namespace {

std::string fresh_dir(const std::string& name) {
  std::string dir = std::string(TG_BINARY_DIR) + "/test-translation-precision/" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// The tiny configuration of test_app.cpp, 20 steps.
std::vector<std::string> tiny(const std::string& out, const std::vector<std::string>& more) {
  std::vector<std::string> a = {"--steps",
                                "20",
                                "--train-size",
                                "600",
                                "--heldout-size",
                                "20",
                                "--valid-size",
                                "20",
                                "--d-model",
                                "32",
                                "--layers",
                                "1",
                                "--heads",
                                "2",
                                "--ff",
                                "64",
                                "--batch-size",
                                "24",
                                "--eval-every",
                                "10",
                                "--warmup",
                                "5",
                                "--lr",
                                "0.003",
                                "--quiet",
                                "--out",
                                out};
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

nlohmann::json read_json(const std::string& path) {
  return nlohmann::json::parse(tgx::read_file(path));
}

}  // namespace

// Bound: every training loss of bf16/f16 within 0.01 nats of f32's at the same step (the losses
// fall from about 3.5 to 2.8 here; the runs measured apart by less than a tenth of the bound).
TEST_CASE("translation: bf16 and f16 runs complete, record their precision, match f32") {
  const std::string base = fresh_dir("f32");
  REQUIRE(tgx::translation::run(tiny(base, {})) == 0);
  const nlohmann::json m32 = read_json(base + "/metrics.json");
  CHECK(m32["precision"] == "f32");
  const auto l32 = read_json(base + "/last/history.json")["losses"].get<std::vector<double>>();
  REQUIRE(l32.size() == 20);
  for (const char* p : {"bf16", "f16"}) {
    const std::string out = fresh_dir(p);
    REQUIRE(tgx::translation::run(tiny(out, {"--precision", p})) == 0);
    const nlohmann::json m = read_json(out + "/metrics.json");
    CHECK(m["precision"] == p);
    CHECK(m["skipped_steps"].get<int64_t>() >= 0);
    const auto l = read_json(out + "/last/history.json")["losses"].get<std::vector<double>>();
    REQUIRE(l.size() == 20);
    for (double v : l) CHECK(std::isfinite(v));
    for (size_t i = 0; i < l.size(); ++i) {
      INFO(p << " step " << i + 1 << ": " << l[i] << " vs f32 " << l32[i]);
      CHECK(std::abs(l[i] - l32[i]) < 0.01);
    }
    const auto ck = tg::nn::load_safetensors(out + "/last/model.safetensors");
    CHECK(ck.metadata.at("precision") == p);
    for (const auto& [name, t] : ck.tensors) CHECK(t.dtype() == tg::kFloat32);
  }
  // Saved in bf16, resumed in f16: it continues to the end and reports the new precision.
  const std::string part = fresh_dir("resume");
  REQUIRE(tgx::translation::run(tiny(part, {"--precision", "bf16", "--max-steps", "10"})) == 0);
  REQUIRE(tgx::translation::run(tiny(part, {"--precision", "f16", "--resume"})) == 0);
  const nlohmann::json m = read_json(part + "/metrics.json");
  CHECK(m["precision"] == "f16");
  CHECK(m["steps_done"] == 20);
}
