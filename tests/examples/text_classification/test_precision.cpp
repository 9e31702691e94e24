// tests/examples/text_classification/test_precision.cpp — --precision on the classifier: the
// seeded smoke run on the spam sample in bf16 and f16 completes, records its precision, and its
// losses are finite and close to the f32 run's; a run resumed in another precision continues.
#include <catch2/catch.hpp>

#include "common/text.hpp"
#include "tiny_run.hpp"
#include "nn/checkpoint.hpp"
#include "text_classification/app.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <numeric>

using Catch::Matchers::Contains;
namespace fs = std::filesystem;

using namespace tgt::cls;

// Bound: every training loss of bf16/f16 within 0.02 nats of f32's at the same step, and the test
// loss within 0.02 (the losses fall from about 0.75 to 0.17 here; bf16 keeps 8 significant bits,
// f16 11; the runs measured apart by less than a tenth of the bound).
TEST_CASE("training: bf16 and f16 smoke runs complete, record their precision, match f32",
          "[text_classification]") {
  const std::string base = fresh_dir("precision_f32");
  REQUIRE(tgx::cls::run(tiny(base)) == 0);
  const nlohmann::json m32 = metrics(base);
  CHECK(m32["precision"] == "f32");
  CHECK(m32["skipped_steps"] == 0);
  const auto l32 = m32["history"]["train_loss"].get<std::vector<double>>();
  for (const char* p : {"bf16", "f16"}) {
    const std::string out = fresh_dir(p);
    REQUIRE(tgx::cls::run(tiny(out, {"--precision", p})) == 0);
    const nlohmann::json m = metrics(out);
    CHECK(m["precision"] == p);
    const auto l = m["history"]["train_loss"].get<std::vector<double>>();
    REQUIRE(l.size() == l32.size());
    for (size_t i = 0; i < l.size(); ++i) {
      INFO(p << " step " << i + 1 << ": " << l[i] << " vs f32 " << l32[i]);
      CHECK(std::isfinite(l[i]));
      CHECK(std::abs(l[i] - l32[i]) < 0.02);
    }
    CHECK(std::abs(m["test_loss"].get<double>() - m32["test_loss"].get<double>()) < 0.02);
    const auto ck = tg::nn::load_safetensors(out + "/last/model.safetensors");
    CHECK(ck.metadata.at("precision") == p);
    for (const auto& [name, t] : ck.tensors) CHECK(t.dtype() == tg::kFloat32);
    fs::remove_all(out);
  }
  // Resumed in another precision: it continues to the end and reports the new one.
  const std::string part = fresh_dir("precision_resume");
  REQUIRE(tgx::cls::run(tiny(part, {"--epochs", "3", "--max-steps", "4", "--precision", "f16"})) ==
          0);
  REQUIRE(tgx::cls::run(tiny(part, {"--epochs", "3", "--resume", "--precision", "bf16"})) == 0);
  CHECK(metrics(part)["precision"] == "bf16");
  CHECK(metrics(part)["history"]["train_loss"].size() == 9);
  REQUIRE_THROWS_WITH(tgx::cls::run(tiny(fresh_dir("precision_bad"), {"--precision", "half"})),
                      Contains("allowed: f32, bf16, f16"));
  fs::remove_all(base);
  fs::remove_all(part);
}
