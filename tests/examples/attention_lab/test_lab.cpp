// tests/examples/attention_lab/test_lab.cpp — the attention lab end to end: files written with the
// right shapes, P rows sum to 1 (0 for padded keys), a checkpointed layer loads by name, bad input
// gets a message; the second order: curvature per head and --sharpness of a trained classifier.
#include "attention_lab/lab.hpp"
#include "autograd/io.hpp"
#include "common/cli.hpp"
#include "common/png.hpp"
#include "common/text.hpp"
#include "nn/attention.hpp"
#include "nn/checkpoint.hpp"
#include "ops/ops.hpp"
#include "text_classification/app.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>

using Catch::Matchers::Contains;

namespace {
std::string out_dir(const std::string& name) {
  auto d = std::filesystem::temp_directory_path() / "tg_test_lab" / name;
  std::filesystem::remove_all(d);
  return d.string();
}
std::string error_of(const std::vector<std::string>& args) {
  try {
    tgx::lab::run(args);
  } catch (const tgx::UserError& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST_CASE("attention lab: S, P, dP, dS files with the right shapes, P rows sum to 1",
          "[examples][lab]") {
  std::string out = out_dir("local");
  REQUIRE(tgx::lab::run({"--len", "5", "--embed", "8", "--heads", "2", "--batch", "2", "--local",
                         "2,0", "--padding", "4,5", "--out", out}) == 0);
  for (const char* name : {"S", "P", "dP", "dS"}) {
    tg::Tensor t = tg::load_npy(out + "/" + name + ".npy");
    CHECK(t.shape() == tg::Shape{2, 2, 5, 5});
    for (int b = 0; b < 2; ++b)
      for (int h = 0; h < 2; ++h) {
        tgx::Image img = tgx::read_png(out + "/" + name + "_b" + std::to_string(b) + "_h" +
                                       std::to_string(h) + ".png");
        CHECK(img.width > 5);
      }
  }
  tg::Tensor P = tg::load_npy(out + "/P.npy");
  auto p = P.to_vector<double>();
  for (int bh = 0; bh < 4; ++bh)
    for (int i = 0; i < 5; ++i) {
      double s = 0;
      for (int j = 0; j < 5; ++j) s += p[size_t((bh * 5 + i) * 5 + j)];
      CHECK(s == Approx(1.0).epsilon(1e-12));
    }
  // batch 0 has 4 valid keys: key 4 gets no probability, row 4 sees keys 2, 3 (local(2,0) & length
  // 4)
  for (int h = 0; h < 2; ++h)
    for (int i = 0; i < 5; ++i) CHECK(p[size_t(((0 * 2 + h) * 5 + i) * 5 + 4)] == 0.0);
  CHECK(p[size_t((0 * 5 + 4) * 5 + 1)] == 0.0);
  CHECK(p[size_t((0 * 5 + 4) * 5 + 2)] > 0.0);
  // dS rows sum to 0 (softmax backward)
  auto ds = tg::load_npy(out + "/dS.npy").to_vector<double>();
  for (int r = 0; r < 20; ++r) {
    double s = 0;
    for (int j = 0; j < 5; ++j) s += ds[size_t(r * 5 + j)];
    CHECK(std::abs(s) < 1e-12);
  }
}

TEST_CASE("attention lab: a layer from a checkpoint, chosen by name", "[examples][lab]") {
  std::string out = out_dir("ckpt");
  std::filesystem::create_directories(out);
  tg::manual_seed(3);
  tg::nn::MultiheadAttention a(8, 2), b(8, 2);
  tg::nn::StateDict sd;
  for (const auto& [k, v] : a.state_dict()) sd.insert("encoder.layers.0.self_attn." + k, v);
  for (const auto& [k, v] : b.state_dict()) sd.insert("encoder.layers.1.self_attn." + k, v);
  tg::nn::save_safetensors(out + "/model.safetensors", sd);
  CHECK_THAT(error_of({"--checkpoint", out, "--heads", "2", "--out", out}),
             Contains("several attention layers; choose one with --layer") &&
                 Contains("encoder.layers.1.self_attn"));
  CHECK_THAT(error_of({"--checkpoint", out, "--layer", "encoder.layers.0.self_attn", "--out", out}),
             Contains("--heads is required"));
  CHECK_THAT(error_of({"--checkpoint", out, "--layer", "decoder.x", "--heads", "2", "--out", out}),
             Contains("no tensor decoder.x.in_proj_weight"));
  REQUIRE(tgx::lab::run({"--checkpoint", out, "--layer", "encoder.layers.1.self_attn", "--heads",
                         "2", "--causal", "--len", "4", "--out", out}) == 0);
  CHECK(tg::load_npy(out + "/P.npy").shape() == tg::Shape{1, 2, 4, 4});
}

TEST_CASE("attention lab: bad input gets a message", "[examples][lab]") {
  std::string out = out_dir("bad");
  CHECK_THAT(error_of({"--embed", "7", "--heads", "2", "--out", out}),
             Contains("embed 7 is not divisible by heads 2"));
  CHECK_THAT(error_of({"--local", "2", "--out", out}), Contains("--local takes LEFT,RIGHT"));
  CHECK_THAT(error_of({"--local", "2,x", "--out", out}),
             Contains("--local: 'x' is not a whole number"));
  CHECK_THAT(error_of({"--causal", "--blocked", "2", "--out", out}), Contains("at most one of"));
  CHECK_THAT(error_of({"--padding", "9", "--len", "4", "--out", out}),
             Contains("length 9 outside 0..T = 4"));
  CHECK_THAT(error_of({"--tokens", "a b", "--len", "3", "--out", out}),
             Contains("2 labels for T = 3"));
  CHECK_THAT(error_of({"--checkpoint", "/nonexistent/ckpt", "--heads", "2"}),
             Contains("no such file"));
  CHECK_THAT(error_of({"--input", "/nonexistent.npy"}),
             Contains("--input /nonexistent.npy: no such file"));
}

TEST_CASE("attention lab: a trained classifier's layer on a text, tokens on the axes",
          "[examples][lab]") {
  std::string run_dir = out_dir("cls_run"), out = out_dir("cls_lab");
  std::string fix = std::string(TG_FIXTURES) + "/examples/text_classification/spam";
  REQUIRE(tgx::cls::run({"--data-dir", fix,         "--out", run_dir,
                         "--quiet",    "--epochs",  "1",     "--batch-size",
                         "8",          "--d-model", "16",    "--layers",
                         "2",          "--heads",   "2",     "--ff",
                         "32",         "--max-len", "32",    "--vocab-size",
                         "300",        "--seed",    "1"}) == 0);
  REQUIRE(tgx::lab::run({"--checkpoint", run_dir, "--layer", "1", "--text", "free money now",
                         "--out", out}) == 0);
  tg::Tensor P = tg::load_npy(out + "/P.npy");
  REQUIRE(P.dim() == 4);
  CHECK(P.size(1) == 2);  // the run's head count, read from its config
  CHECK(P.size(2) >= 3);  // one row per token of "free money now"
  CHECK_THAT(error_of({"--checkpoint", run_dir, "--layer", "2", "--text", "x", "--out", out}),
             Contains("--layer 2: the model in") && Contains("has layers 0..1"));
  CHECK_THAT(error_of({"--checkpoint", run_dir, "--text", "  ", "--out", out}),
             Contains("--text: the text is empty"));
  CHECK_THAT(error_of({"--text", "x", "--out", out}), Contains("--text needs --checkpoint"));
}

TEST_CASE("attention lab: a NaN input, a run folder without --text, sizes out of range",
          "[examples][lab]") {
  std::string out = out_dir("hard");
  const std::string nan_path = out + "/nan.npy";
  std::filesystem::create_directories(out);
  tg::save_npy(nan_path, tg::full({4, 8}, NAN, tg::kFloat64));
  CHECK_THAT(error_of({"--input", nan_path, "--out", out}),
             Contains("holds NaN or infinite values"));
  // A text_classification run folder (best/ + tokenizer.json) without --text.
  const std::string run_dir = out + "/run";
  std::filesystem::create_directories(run_dir + "/best");
  std::ofstream(run_dir + "/best/model.safetensors") << "x";
  std::ofstream(run_dir + "/tokenizer.json") << "{}";
  CHECK_THAT(error_of({"--checkpoint", run_dir, "--heads", "2", "--out", out}),
             Contains("is a text_classification run folder: give --text"));
  CHECK_THAT(error_of({"--len", "-5", "--out", out}), Contains("--len -5: must be in [1, 512]"));
  CHECK_THAT(error_of({"--heads", "0", "--out", out}), Contains("--heads 0: must be in [1, 256]"));
}

TEST_CASE("attention lab: a run folder of another kind says what it expected (issue 23)",
          "[examples][lab]") {
  std::string out = out_dir("other_run");
  const std::string run_dir = out + "/translation";  // best/ and last/, no tokenizer.json
  for (const char* sub : {"/best", "/last"}) {
    std::filesystem::create_directories(run_dir + sub);
    std::ofstream(run_dir + sub + "/model.safetensors") << "x";
  }
  const std::string msg = error_of({"--checkpoint", run_dir, "--heads", "2", "--out", out});
  CHECK_THAT(msg, Contains("--checkpoint " + run_dir + ": this folder holds no model.safetensors"));
  CHECK_THAT(
      msg, Contains("try --checkpoint " + run_dir + "/best or --checkpoint " + run_dir + "/last"));
  CHECK_THAT(msg, !Contains("no such file"));
  std::filesystem::create_directories(out + "/empty");
  CHECK_THAT(error_of({"--checkpoint", out + "/empty", "--heads", "2", "--out", out}),
             Contains("this folder holds no model.safetensors (expected a checkpoint folder"));
  CHECK_THAT(error_of({"--seed", "-1", "--out", out}), Contains("--seed -1: must be >= 0"));
  CHECK_THAT(error_of({"--blocked", "0", "--out", out}),
             Contains("--blocked 0: must be in [1, 512]"));
  CHECK_THAT(error_of({"--local", "-1,0", "--out", out}),
             Contains("--local -1,0: LEFT and RIGHT must be >= 0"));
}

TEST_CASE("attention lab: --sharpness of a trained classifier by power iteration",
          "[examples][lab]") {
  std::string run_dir = out_dir("sharp_run"), out = out_dir("sharp_lab");
  std::string fix = std::string(TG_FIXTURES) + "/examples/text_classification/spam";
  REQUIRE(tgx::cls::run({"--data-dir", fix,         "--out", run_dir,
                         "--quiet",    "--epochs",  "2",     "--batch-size",
                         "8",          "--d-model", "16",    "--layers",
                         "1",          "--heads",   "2",     "--ff",
                         "32",         "--max-len", "32",    "--vocab-size",
                         "300",        "--seed",    "1"}) == 0);
  REQUIRE(tgx::lab::run({"--sharpness", run_dir, "--data-dir", fix, "--examples", "16", "--iters",
                         "40", "--out", out}) == 0);
  const auto j = nlohmann::json::parse(tgx::read_file(out + "/sharpness.json"));
  const auto lambda = j["lambda"].get<std::vector<double>>();
  REQUIRE(lambda.size() == 40);
  CHECK(j["examples"] == 16);
  CHECK(j["parameters"].get<int64_t>() > 1000);
  for (double l : lambda) CHECK(std::isfinite(l));
  // power iteration settles on the top eigenvalue: the last quotients agree, and it is positive
  // at a trained point (the loss curves upward along its sharpest direction)
  CHECK(lambda.back() > 0);
  CHECK(std::fabs(lambda.back() - lambda[lambda.size() - 2]) < 0.02 * std::fabs(lambda.back()));
  CHECK(tgx::read_png(out + "/sharpness.png").width == 800);
  CHECK_THAT(error_of({"--sharpness", run_dir, "--len", "5", "--out", out}),
             Contains("--len does not go with --sharpness"));
  CHECK_THAT(error_of({"--iters", "5", "--out", out}),
             Contains("--iters goes with --sharpness only"));
}
