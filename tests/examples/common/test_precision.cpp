// tests/examples/common/test_precision.cpp — --precision's values and refusal, the autocast region
// it opens, and what a checkpoint keeps of it: the precision, f16's skipped steps and loss scale,
// and the line a run resumed in another precision prints.
#include <catch2/catch.hpp>

#include "common/cli.hpp"
#include "common/precision.hpp"
#include "nn/optim.hpp"
#include "ops/autocast/autocast.hpp"
#include "ops/ops.hpp"

using namespace tgx;
using Catch::Matchers::Contains;

TEST_CASE("precision: f32, bf16 and f16 parse, anything else names the allowed values",
          "[precision]") {
  CHECK(parse_precision("f32") == Precision::kFloat32);
  CHECK(parse_precision("bf16") == Precision::kBFloat16);
  CHECK(parse_precision("f16") == Precision::kFloat16);
  for (Precision p : {Precision::kFloat32, Precision::kBFloat16, Precision::kFloat16})
    CHECK(parse_precision(precision_name(p)) == p);
  REQUIRE_THROWS_AS(parse_precision("fp8"), UserError);
  REQUIRE_THROWS_WITH(parse_precision("fp8"),
                      Contains("--precision fp8: unknown precision (allowed: f32, bf16, f16)"));
  ArgParser p("prog", "test");
  precision_option(p);
  const char* none[] = {"prog"};
  REQUIRE(p.parse(1, none));
  CHECK(precision_of(p) == Precision::kFloat32);  // the default: results unchanged
  ArgParser q("prog", "test");
  precision_option(q);
  const char* bf[] = {"prog", "--precision", "BF16"};
  REQUIRE(q.parse(3, bf));
  REQUIRE_THROWS_WITH(precision_of(q), Contains("allowed: f32, bf16, f16"));
}

TEST_CASE("precision: the scope turns autocast on in bf16 and f16 only", "[precision]") {
  REQUIRE_FALSE(tg::is_autocast_enabled());
  {
    PrecisionScope s(Precision::kFloat32);
    CHECK_FALSE(tg::is_autocast_enabled());
  }
  {
    PrecisionScope s(Precision::kBFloat16);
    CHECK(tg::is_autocast_enabled());
    CHECK(tg::get_autocast_dtype() == tg::kBFloat16);
  }
  {
    PrecisionScope s(Precision::kFloat16);
    CHECK(tg::is_autocast_enabled());
    CHECK(tg::get_autocast_dtype() == tg::kFloat16);
  }
  CHECK_FALSE(tg::is_autocast_enabled());
}

TEST_CASE("precision: checkpoints keep it, a resume in another precision says so", "[precision]") {
  MixedPrecision f32(Precision::kFloat32), bf16(Precision::kBFloat16);
  CHECK(f32.describe().empty());
  CHECK_THAT(bf16.describe(), Contains("precision bf16") && Contains("float32 master weights"));
  CHECK(bf16.metadata().at("precision") == "bf16");
  CHECK(bf16.metadata().count("precision.scaler") == 0);  // bf16 needs no loss scale
  CHECK(bf16.resume(bf16.metadata(), "ck").empty());
  const std::string line = f32.resume(bf16.metadata(), "--resume: ck");
  CHECK_THAT(line, Contains("--resume: ck was saved by a bf16 run; it continues in f32"));
  // A checkpoint from before --precision counts as f32.
  CHECK(f32.resume({{"other", "x"}}, "ck").empty());
  CHECK_THAT(bf16.resume({{"other", "x"}}, "ck"), Contains("saved by a f32 run"));
  REQUIRE_THROWS_WITH(f32.resume({{"precision", "fp8"}}, "ck"), Contains("ck fp8"));

  // f16: the loss scale and the skipped steps travel with the checkpoint.
  MixedPrecision f16(Precision::kFloat16);
  CHECK(f16.loss_scale() == 65536.0);
  tg::nn::Metadata m = f16.metadata();
  m["precision.skipped_steps"] = "3";
  m["precision.scaler"] =
      R"({"scale": 1024.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 2000,
          "_growth_tracker": 7.0})";
  MixedPrecision again(Precision::kFloat16);
  CHECK(again.resume(m, "ck").empty());
  CHECK(again.loss_scale() == 1024.0);
  CHECK(again.skipped_steps() == 3);
  MixedPrecision from_bf16(Precision::kFloat16);
  CHECK_THAT(from_bf16.resume(bf16.metadata(), "ck"),
             Contains("continues in f16") && Contains("loss scale starts at its default"));
  CHECK(from_bf16.loss_scale() == 65536.0);
}

TEST_CASE("precision: f16 skips a step whose gradient is inf and halves the scale", "[precision]") {
  tg::Tensor w = tg::ones({2}).requires_grad_(true);
  tg::nn::SGDOptions so;
  so.lr = 0.1;
  tg::nn::SGD opt({w}, so);
  MixedPrecision mp(Precision::kFloat16);
  // The loss 1e35 · sum(w) scaled by 65536 overflows float32: every gradient is inf.
  CHECK_FALSE(mp.backward_and_step(tg::sum(w * 1e35), opt, {w}, 1.0));
  CHECK(mp.skipped_steps() == 1);
  CHECK(mp.loss_scale() == 32768.0);
  CHECK(w.to_vector<float>() == std::vector<float>{1, 1});  // not stepped
  CHECK(mp.backward_and_step(tg::sum(w * 2.0), opt, {w}, 0));
  CHECK(w.to_vector<float>()[0] == Approx(0.8));  // 1 - 0.1 · 2: the unscaled gradient
  CHECK(mp.metadata().at("precision.skipped_steps") == "1");
}
