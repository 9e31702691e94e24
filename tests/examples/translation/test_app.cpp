// tests/examples/translation/test_app.cpp — the program end to end through run(): a seeded
// smoke run on a tiny numbers task (loss falls, checkpoints written, --resume continues from
// the saved step and matches an uninterrupted run, --translate works from the checkpoint and
// writes the attention PNG, bad sentences and mismatched checkpoints are rejected), and a short
// run on the committed freedict sample with its copy baseline; issue 23: options checked before
// the data is made, a finished run kept unless --resume or --overwrite, --translate refusing
// training options, --resume refusing NaN weights.
#include <catch2/catch.hpp>

#include "autograd/io.hpp"
#include "common/cli.hpp"
#include "common/png.hpp"
#include "common/text.hpp"
#include "nn/checkpoint.hpp"
#include "ops/ops.hpp"
#include "translation/app.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <tuple>
#include <numeric>

using namespace tgx::translation;
using Catch::Contains;

namespace {

std::string fresh_dir(const std::string& name) {
  std::string dir = std::string(TG_BINARY_DIR) + "/test-translation-app/" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::vector<std::string> tiny_args(const std::string& out) {
  return {"--steps",
          "40",
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
          "--beam",
          "2",
          "--quiet",
          "--out",
          out,
          "--metrics-out",
          out + "/metrics.json"};
}

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& more) {
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

nlohmann::json read_json(const std::string& path) {
  return nlohmann::json::parse(tgx::read_file(path));
}

double mean(const std::vector<double>& v, size_t from, size_t to) {
  return std::accumulate(v.begin() + from, v.begin() + to, 0.0) / double(to - from);
}

}  // namespace

TEST_CASE("translation: smoke run trains, resumes, translates and rejects bad checkpoints") {
  std::string out = fresh_dir("smoke"), full = fresh_dir("full");
  REQUIRE(run(with(tiny_args(out), {"--max-steps", "20"})) == 0);
  CHECK(tgx::file_exists(out + "/last/model.safetensors"));
  CHECK(tgx::file_exists(out + "/last/training_state.safetensors"));
  CHECK(tgx::file_exists(out + "/best/model.safetensors"));
  CHECK(tgx::file_exists(out + "/best/vocab.json"));
  CHECK(tgx::file_exists(out + "/loss.png"));
  CHECK(tgx::file_exists(out + "/attention/cross_attention.png"));
  CHECK(tgx::file_exists(out + "/attention/encoder_self_L0_H1.png"));
  CHECK(tgx::file_exists(out + "/attention/decoder_self_L0_H0.png"));
  nlohmann::json m = read_json(out + "/metrics.json");
  CHECK(m["steps_done"] == 20);
  CHECK(m.contains("heldout_exact_match"));
  CHECK(m["heldout_chrf_greedy"].get<double>() > 0);
  nlohmann::json h = read_json(out + "/last/history.json");
  auto losses = h["losses"].get<std::vector<double>>();
  REQUIRE(losses.size() == 20);
  CHECK(mean(losses, 15, 20) < 0.9 * mean(losses, 0, 5));  // the loss falls (3.47 -> 2.80)

  // --resume continues from step 20 to 40 and ends where an uninterrupted run ends.
  REQUIRE(run(with(tiny_args(out), {"--resume"})) == 0);
  m = read_json(out + "/metrics.json");
  CHECK(m["steps_done"] == 40);
  auto resumed = read_json(out + "/last/history.json")["losses"].get<std::vector<double>>();
  REQUIRE(resumed.size() == 40);
  CHECK(std::equal(losses.begin(), losses.end(), resumed.begin()));
  REQUIRE(run(tiny_args(full)) == 0);
  auto straight = read_json(full + "/last/history.json")["losses"].get<std::vector<double>>();
  REQUIRE(straight.size() == 40);
  CHECK(straight.back() == Approx(resumed.back()).epsilon(1e-6));

  // --translate from the saved checkpoint writes the cross-attention map.
  REQUIRE(run({"--out", out, "--translate", "Twenty-One thousand", "--quiet"}) == 0);
  tgx::Image img = tgx::read_png(out + "/translate/cross_attention.png");
  CHECK(img.width > 50);
  CHECK(tgx::file_exists(out + "/translate/cross_L0_H1.png"));
  REQUIRE_THROWS_WITH(run({"--out", out, "--translate", "twenty-onee thousend"}),
                      Contains("unknown tokens: 'onee', 'thousend'"));
  REQUIRE_THROWS_WITH(run({"--out", out, "--translate", "   "}), Contains("empty"));
  REQUIRE_THROWS_WITH(run({"--out", out + "/nothing", "--translate", "one"}),
                      Contains("no checkpoint"));

  // A checkpoint from another model or vocabulary is refused.
  REQUIRE_THROWS_WITH(run(with(tiny_args(out), {"--resume", "--d-model", "16"})),
                      Contains("another model") && Contains("d_model 16 vs 32"));
  REQUIRE_THROWS_WITH(
      run(with(tiny_args(out), {"--resume", "--dataset", "freedict-eng-fra", "--data-dir",
                                std::string(TG_FIXTURES) + "/examples/translation/freedict"})),
      Contains("another model") && Contains("dataset freedict-eng-fra vs numbers"));
  tg::write_file_atomic(out + "/best/vocab.json",
                        R"({"level":"word","source":["<pad>","<bos>","<eos>","one"],)"
                        R"("target":["<pad>","<bos>","<eos>","un"]})");
  REQUIRE_THROWS_WITH(run({"--out", out, "--translate", "one"}), Contains("other vocabularies"));
  REQUIRE_THROWS_AS(run({"--dataset", "klingon"}), tgx::UserError);
}

TEST_CASE("translation: freedict sample trains at character level with a copy baseline") {
  std::string out = fresh_dir("freedict");
  REQUIRE(run({"--dataset",
               "freedict-eng-fra",
               "--data-dir",
               std::string(TG_FIXTURES) + "/examples/translation/freedict",
               "--steps",
               "6",
               "--batch-size",
               "8",
               "--d-model",
               "16",
               "--layers",
               "1",
               "--heads",
               "2",
               "--ff",
               "32",
               "--eval-every",
               "3",
               "--beam",
               "2",
               "--quiet",
               "--out",
               out,
               "--metrics-out",
               out + "/m.json"}) == 0);
  nlohmann::json m = read_json(out + "/m.json");
  CHECK(m["dataset"] == "freedict-eng-fra");
  CHECK(m["heldout_pairs"] == 3);
  CHECK(m.contains("baseline_copy_chrf"));
  CHECK(m["baseline_copy_exact_match"].get<double>() >= 0);
  REQUIRE_THROWS_WITH(run({"--dataset", "freedict-eng-fra", "--data-dir", out + "/none"}),
                      Contains("sudo apt-get install dict-freedict-eng-fra"));
}

// ---- issue 23: options checked before the data is made, the run folder guard, --translate's
// options, a checkpoint with NaN weights ----

TEST_CASE("translation: every numeric option is checked before any work") {
  const std::string out = fresh_dir("bad-options");
  for (auto [flag, value, want] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"--d-model", "-2", "--d-model -2: must be in [2, 8192]"},
           {"--d-model", "99999", "--d-model 99999: must be in [2, 8192]"},
           {"--layers", "0", "--layers 0: must be in [1, 64]"},
           {"--heads", "-1", "--heads -1: must be in [1, 256]"},
           {"--ff", "0", "--ff 0: must be in [1, 65536]"},
           {"--dropout", "1", "--dropout 1: must be in [0, 0.999]"},
           {"--train-size", "0", "--train-size 0: must be in [1, 10000000]"},
           {"--train-size", "1000000000000",
            "--train-size 1000000000000: must be in [1, 10000000]"},
           {"--heldout-size", "-5", "--heldout-size -5: must be in [1, 99000]"},
           {"--valid-size", "0", "--valid-size 0: must be in [1, 99000]"},
           {"--steps", "0", "--steps 0: must be in [1, 100000000]"},
           {"--batch-size", "0", "--batch-size 0: must be in [1, 65536]"},
           {"--lr", "0", "--lr 0: must be in (0, 10]"},
           {"--weight-decay", "1e11", "--weight-decay 1e11: must be in [0, 10]"},
           {"--label-smoothing", "1", "--label-smoothing 1: must be in [0, 0.999]"},
           {"--seed", "-1", "--seed -1: must be >= 0"},
           {"--length-penalty", "-1", "--length-penalty -1: must be in [0, 10]"},
           {"--beam", "0", "--beam 0: must be in [1, 64] (1: greedy)"},
           // step + --max-steps overflowed int64 (undefined behaviour)
           {"--max-steps", "9223372036854775807",
            "--max-steps 9223372036854775807: must be in [0, 100000000] (0: run to --steps)"}})
    CHECK_THROWS_WITH(run(with(tiny_args(out), {flag, value})), Contains(want));
  CHECK(std::filesystem::is_empty(out));
}

TEST_CASE(
    "translation: a finished run is kept unless --resume or --overwrite, --translate "
    "refuses training options") {
  const std::string out = fresh_dir("guard");
  const auto args = with(tiny_args(out), {"--steps", "10", "--eval-every", "5"});
  REQUIRE(run(args) == 0);
  const std::string before = tgx::read_file(out + "/best/model.safetensors");
  std::ofstream(out + "/notes.txt") << "mine";
  REQUIRE_THROWS_WITH(run(args), Contains("--out " + out + " holds a run") &&
                                     Contains("--resume") && Contains("--overwrite"));
  CHECK(tgx::read_file(out + "/best/model.safetensors") == before);
  REQUIRE(run(with(args, {"--overwrite", "--seed", "2"})) == 0);
  CHECK(read_json(out + "/metrics.json")["seed"] == 2);
  CHECK(tgx::read_file(out + "/notes.txt") == "mine");

  REQUIRE_THROWS_WITH(run({"--out", out, "--translate", "one", "--steps", "5", "--resume"}),
                      Contains("--translate does not use --steps, --resume"));
  REQUIRE(run({"--out", out, "--translate", "one", "--beam", "1", "--length-penalty", "0.5",
               "--quiet"}) == 0);

  // --resume refuses a checkpoint whose weights are NaN, without blaming --lr.
  const std::string part = fresh_dir("nan-resume");
  const auto pargs = with(tiny_args(part), {"--steps", "10", "--eval-every", "5"});
  REQUIRE(run(with(pargs, {"--max-steps", "5"})) == 0);
  const std::string model = part + "/last/model.safetensors";
  tg::nn::SafetensorsFile f = tg::nn::load_safetensors(model);
  tg::nn::StateDict poisoned;
  for (const auto& [name, t] : f.tensors)
    poisoned.insert(name, name.rfind("src_embed", 0) == 0 ? tg::full_like(t, NAN) : t);
  tg::nn::save_safetensors(model, poisoned, f.metadata);
  try {
    run(with(pargs, {"--resume"}));
    FAIL("resumed from NaN weights");
  } catch (const tgx::UserError& e) {
    const std::string msg = e.what();
    CHECK_THAT(msg, Contains("--resume: " + part + "/last: weight src_embed"));
    CHECK_THAT(msg, Contains("holds NaN or infinite values"));
    CHECK_THAT(msg, !Contains("--lr"));
  }
  // --translate refuses a best/ model with NaN weights too.
  const std::string best = part + "/best/model.safetensors";
  tg::nn::SafetensorsFile g = tg::nn::load_safetensors(best);
  tg::nn::StateDict bad;
  for (const auto& [name, t] : g.tensors)
    bad.insert(name, name.rfind("src_embed", 0) == 0 ? tg::full_like(t, NAN) : t);
  tg::nn::save_safetensors(best, bad, g.metadata);
  REQUIRE_THROWS_WITH(
      run({"--out", part, "--translate", "one"}),
      Contains(best + ": weight src_embed") && Contains("refusing to translate with it"));
}

TEST_CASE("translation: a loss that blows up without NaN stops the run (issue 23)") {
  const std::string out = fresh_dir("blowup");
  try {
    run(with(tiny_args(out), {"--steps", "20", "--warmup", "2", "--lr", "10", "--clip", "0"}));
    FAIL("a run at --lr 10 --clip 0 finished");
  } catch (const tg::Error& e) {
    const std::string msg = e.what();
    CHECK_THAT(msg, Contains("training diverged: the mean loss of steps 1-10 is"));
    CHECK_THAT(msg, Contains("uniform guess among"));
    CHECK_THAT(msg, Contains("(at step 10); no checkpoint was written yet. Lower --lr (now 10)"));
  }
  CHECK_FALSE(tgx::file_exists(out + "/metrics.json"));
  CHECK_FALSE(tgx::file_exists(out + "/best/model.safetensors"));
}
