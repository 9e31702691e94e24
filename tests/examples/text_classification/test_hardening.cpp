// tests/examples/text_classification/test_hardening.cpp — regressions from the reliability run
// (issue "hardening"): --clip 0 means off and a negative --clip is refused, a diverging run
// stops with a message naming the step, a kill between save_last's two renames is recovered on
// --resume, and write-ahead files of dead writers are removed; --split-seed fixes the split.
// Issue 23: size options checked before any work (--max-len -1 crashed), a finished run kept
// unless --resume or --overwrite, --predict/--explain refusing training options and running
// together, --resume refusing NaN weights.
#include <catch2/catch.hpp>

#include "common/cli.hpp"
#include "common/text.hpp"
#include "autograd/io.hpp"
#include "nn/checkpoint.hpp"
#include "text_classification/app.hpp"
#include "text_classification/bpe.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <tuple>

using namespace tgx::cls;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {
const std::string kFix = std::string(TG_FIXTURES) + "/examples/text_classification";
std::string fresh(const std::string& name) {
  std::string d = std::string(TG_BINARY_DIR) + "/tmp_cls_hard_" + name;
  fs::remove_all(d);
  return d;
}
std::vector<std::string> tiny(const std::string& out, std::vector<std::string> more = {}) {
  std::vector<std::string> a = {"--data-dir", kFix + "/spam", "--out", out,
                                "--quiet",    "--epochs",     "3",     "--batch-size",
                                "8",          "--lr",         "3e-3",  "--d-model",
                                "16",         "--layers",     "1",     "--heads",
                                "2",          "--ff",         "32",    "--max-len",
                                "48",         "--vocab-size", "400",   "--seed",
                                "3",          "--patience",   "0",     "--dropout",
                                "0.1"};
  a.insert(a.end(), more.begin(), more.end());
  return a;
}
nlohmann::json metrics(const std::string& out) {
  return nlohmann::json::parse(tgx::read_file(out + "/metrics.json"));
}
}  // namespace

TEST_CASE("hardening: --clip 0 is off, a negative --clip is refused", "[text_classification]") {
  const std::string out = fresh("clip");
  REQUIRE_THROWS_WITH(run(tiny(out, {"--clip", "-1"})), Contains("--clip -1: must be >= 0"));
  // With clipping off the model still learns (before: every gradient was scaled to zero).
  REQUIRE(run(tiny(out, {"--clip", "0"})) == 0);
  auto loss = metrics(out)["history"]["train_loss"].get<std::vector<double>>();
  REQUIRE(loss.size() > 4);
  CHECK(loss.back() < loss.front());
  fs::remove_all(out);
}

TEST_CASE("hardening: a diverging run stops with a message naming the step",
          "[text_classification]") {
  const std::string out = fresh("diverge");
  try {
    run(tiny(out, {"--lr", "1e6", "--epochs", "6"}));
    FAIL("a run at --lr 1e6 finished");
  } catch (const tg::Error& e) {
    const std::string msg = e.what();
    // Since issue 23 the blown-up guard (a mean loss of 5e11, finite) stops it before a NaN.
    CHECK_THAT(msg, Contains("training diverged: the mean loss of steps 1-3 is") &&
                        Contains("uniform guess among 2 outcomes"));
    CHECK_THAT(msg, Contains("at step"));
    CHECK_THAT(msg, Contains("Lower --lr (now 1000000)"));
  }
  CHECK_FALSE(fs::exists(out + "/metrics.json"));  // no report of a NaN model
  fs::remove_all(out);
}

TEST_CASE("hardening: a kill between save_last's renames is recovered by --resume",
          "[text_classification]") {
  const std::string a = fresh("full"), b = fresh("killed");
  REQUIRE(run(tiny(a)) == 0);
  REQUIRE(run(tiny(b, {"--max-steps", "4"})) == 0);
  // The moment between rename(last, last.old) and rename(last.new, last): no last/, two
  // complete checkpoints (here both the step-4 one), and a dead writer's temporary file.
  fs::rename(b + "/last", b + "/last.old");
  fs::copy(b + "/last.old", b + "/last.new");
  const std::string stale = b + "/last.old/model.safetensors.tmp.999999999";
  std::ofstream(stale) << "partial";
  REQUIRE(run(tiny(b, {"--resume"})) == 0);
  CHECK_FALSE(fs::exists(stale));
  CHECK(fs::exists(b + "/last"));
  auto la = metrics(a)["history"]["train_loss"].get<std::vector<double>>();
  auto lb = metrics(b)["history"]["train_loss"].get<std::vector<double>>();
  REQUIRE(la.size() == lb.size());
  for (size_t i = 0; i < la.size(); ++i) CHECK(lb[i] == Approx(la[i]).epsilon(1e-5));
  // Only last.old complete (last.new torn): that one is taken.
  fs::remove_all(b);
  REQUIRE(run(tiny(b, {"--max-steps", "4"})) == 0);
  fs::rename(b + "/last", b + "/last.old");
  fs::create_directories(b + "/last.new");
  std::ofstream(b + "/last.new/model.safetensors") << "torn";
  REQUIRE(run(tiny(b, {"--resume"})) == 0);
  CHECK(metrics(b)["steps"] == metrics(a)["steps"]);
  fs::remove_all(a);
  fs::remove_all(b);
}

TEST_CASE("hardening: --explain reads a saved run and leaves it untouched",
          "[text_classification]") {
  const std::string out = fresh("explain");
  REQUIRE_THROWS_WITH(run({"--out", out, "--explain", "free money"}), Contains("no trained model"));
  REQUIRE(run(tiny(out, {"--epochs", "1"})) == 0);
  const std::string best = out + "/best/model.safetensors", last = out + "/last";
  const std::string before = tgx::read_file(best);
  const auto mtime = fs::last_write_time(best);
  const auto last_mtime = fs::last_write_time(tg::nn::checkpoint_model_path(last));
  REQUIRE(run({"--out", out, "--explain", "win a free cruise now"}) == 0);
  CHECK(fs::exists(out + "/explain/layer0_head0.png"));
  CHECK(tgx::read_file(best) == before);
  CHECK(fs::last_write_time(best) == mtime);
  CHECK(fs::last_write_time(tg::nn::checkpoint_model_path(last)) == last_mtime);
  REQUIRE_THROWS_WITH(run({"--out", out, "--explain", "  "}), Contains("empty"));
  fs::remove_all(out);
}

TEST_CASE("hardening: another run's tokenizer and a NaN model are refused at load",
          "[text_classification]") {
  const std::string a = fresh("fp_a"), b = fresh("fp_b");
  REQUIRE(run(tiny(a, {"--epochs", "1"})) == 0);
  REQUIRE(run(tiny(b, {"--epochs", "1", "--seed", "4"})) == 0);  // same vocabulary size
  REQUIRE(run({"--out", a, "--predict", "win a prize"}) == 0);
  const std::string own = tgx::read_file(a + "/tokenizer.json");
  fs::copy_file(b + "/tokenizer.json", a + "/tokenizer.json", fs::copy_options::overwrite_existing);
  REQUIRE_THROWS_WITH(run({"--out", a, "--predict", "win a prize"}),
                      Contains("is not the tokenizer") && Contains("different runs"));
  tg::write_file_atomic(a + "/tokenizer.json", own);
  // A model whose weights went NaN.
  const std::string best = a + "/best/model.safetensors";
  tg::nn::SafetensorsFile f = tg::nn::load_safetensors(best);
  tg::nn::StateDict poisoned;
  for (const auto& [name, t] : f.tensors)
    poisoned.insert(
        name, name.find("head") != std::string::npos && t.dim() == 2 ? tg::full_like(t, NAN) : t);
  tg::nn::save_safetensors(best, poisoned, f.metadata);
  REQUIRE_THROWS_WITH(run({"--out", a, "--predict", "win a prize"}),
                      Contains("holds NaN or infinite values"));
  fs::remove_all(a);
  fs::remove_all(b);
}

TEST_CASE("hardening: out-of-range options are refused naming the allowed range",
          "[text_classification]") {
  const std::string out = fresh("flags");
  for (auto [flag, value, want] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"--patience", "-1", "--patience -1: must be >= 0 (0: off)"},
           {"--limit", "-1", "--limit -1: must be >= 0 (0: all)"},
           {"--max-steps", "-1", "--max-steps -1: must be >= 0 (0: no limit)"},
           {"--save-every", "-1", "--save-every -1: must be >= 0"},
           {"--epochs", "0", "--epochs 0: must be in [1, 1000000]"},
           {"--dropout", "1.5", "--dropout 1.5: must be in [0, 0.999]"},
           {"--threads", "-2", "--threads -2: must be >= 0"},
           {"--split-seed", "-2", "--split-seed -2: must be >= -1 (-1: --seed)"},
           {"--tail", "48", "--tail 48: must be in [-1, 47] (-1: half of --max-len)"}})
    CHECK_THROWS_WITH(run(tiny(out, {flag, value})), Contains(want));
  CHECK_THROWS_WITH(run(tiny(out, {"--metrics-out", "/proc/no/such/metrics.json"})),
                    Contains("--metrics-out /proc/no/such/metrics.json: cannot write there"));
  fs::remove_all(out);
}

TEST_CASE("hardening: the BPE encodes a long text's first tokens without tokenizing all of it",
          "[text_classification]") {
  std::vector<std::string> texts = {"free money now", "the meeting is at noon", "win a prize"};
  Bpe::Options bo;
  bo.vocab_size = 60;
  Bpe bpe = Bpe::train(texts, bo);
  std::string longtext;
  for (int i = 0; i < 20000; ++i) longtext += (i % 7 ? "win money " : "meeting\u00e9 at   noon ");
  const std::vector<int64_t> all = bpe.encode(longtext);
  for (int64_t max_len : {int64_t(1), int64_t(10), int64_t(128), int64_t(5000)}) {
    std::vector<int64_t> head = bpe.encode(longtext, max_len);
    REQUIRE(static_cast<int64_t>(head.size()) == max_len);
    REQUIRE(std::equal(head.begin(), head.end(), all.begin()));
  }
  // A 50 MB line is cut, not tokenized whole (time and memory stay small).
  std::string huge(50u << 20, 'a');
  REQUIRE(bpe.encode(huge, 128).size() <= 128);
}

TEST_CASE("hardening: --split-seed keeps the split while --seed changes the initialisation",
          "[text_classification]") {
  const std::string a = fresh("split_a"), b = fresh("split_b");
  REQUIRE(run(tiny(a, {"--epochs", "1"})) == 0);  // seed 3: split 3
  REQUIRE(run(tiny(b, {"--epochs", "1", "--seed", "9", "--split-seed", "3"})) == 0);
  nlohmann::json ma = metrics(a), mb = metrics(b);
  CHECK(ma["split_seed"] == 3);
  CHECK(mb["seed"] == 9);
  CHECK(mb["split_seed"] == 3);
  // Naive Bayes sees only the split: the same confusion matrix on the same test examples.
  CHECK(ma["baseline"] == mb["baseline"]);
  CHECK(ma["examples"] == mb["examples"]);
  // The Transformer starts elsewhere: its first logged loss differs.
  CHECK(ma["history"] != mb["history"]);
  fs::remove_all(a);
  fs::remove_all(b);
}

// ---- issue 23 ----

TEST_CASE("hardening: --max-len and every size option are checked before any work",
          "[text_classification]") {
  const std::string out = fresh("sizes");
  for (auto [flag, value, want] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"--max-len", "-1",
            "--max-len -1: must be in [1, 65536]"},  // was vector::_M_default_append
           {"--max-len", "0", "--max-len 0: must be in [1, 65536]"},
           {"--max-len", "100000000", "--max-len 100000000: must be in [1, 65536]"},
           {"--d-model", "0", "--d-model 0: must be in [1, 8192]"},
           {"--d-model", "1000000", "--d-model 1000000: must be in [1, 8192]"},
           {"--layers", "-3", "--layers -3: must be in [1, 128]"},
           {"--heads", "0", "--heads 0: must be in [1, 256]"},
           {"--ff", "-1", "--ff -1: must be in [1, 65536]"},
           {"--vocab-size", "5", "--vocab-size 5: must be in [16, 1000000]"},
           {"--batch-size", "0", "--batch-size 0: must be in [1, 65536]"},
           {"--batch-size", "99999999", "--batch-size 99999999: must be in [1, 65536]"},
           {"--lr", "0", "--lr 0: must be in (0, 1000000]"},
           {"--lr", "-1", "--lr -1: must be in (0, 1000000]"},
           {"--seed", "-1", "--seed -1: must be >= 0"},
           {"--weight-decay", "1e11", "--weight-decay 1e11: must be in [0, 10]"},
           // epochs x steps per epoch overflowed int64 (undefined behaviour)
           {"--epochs", "4611686018427387904",
            "--epochs 4611686018427387904: must be in [1, 1000000]"}})
    CHECK_THROWS_WITH(run(tiny(out, {flag, value})), Contains(want));
  CHECK((!fs::exists(out) || fs::is_empty(out)));  // nothing was written
}

TEST_CASE("hardening: a finished run is not replaced without --resume or --overwrite",
          "[text_classification]") {
  const std::string out = fresh("guard");
  REQUIRE(run(tiny(out, {"--epochs", "1"})) == 0);
  const std::string before = tgx::read_file(out + "/metrics.json");
  const std::string model = tgx::read_file(out + "/best/model.safetensors");
  std::ofstream(out + "/notes.txt") << "mine";
  REQUIRE_THROWS_WITH(
      run(tiny(out, {"--epochs", "1"})),
      Contains("--out " + out + " holds a run") && Contains("--resume") && Contains("--overwrite"));
  CHECK(tgx::read_file(out + "/metrics.json") == before);
  CHECK(tgx::read_file(out + "/best/model.safetensors") == model);
  REQUIRE(run(tiny(out, {"--epochs", "1", "--seed", "4", "--overwrite"})) == 0);
  CHECK(metrics(out)["seed"] == 4);
  CHECK(tgx::read_file(out + "/notes.txt") == "mine");
  fs::remove_all(out);
}

TEST_CASE("hardening: --predict and --explain refuse training options and run together",
          "[text_classification]") {
  const std::string out = fresh("modes");
  REQUIRE(run(tiny(out, {"--epochs", "1"})) == 0);
  REQUIRE_THROWS_WITH(run({"--out", out, "--predict", "win", "--epochs", "3", "--resume"}),
                      Contains("--predict does not use --epochs, --resume"));
  REQUIRE_THROWS_WITH(run({"--out", out, "--explain", "win", "--lr", "1"}),
                      Contains("--explain does not use --lr"));
  REQUIRE_THROWS_WITH(run({"--out", out, "--explain", "win", "--predict", "x", "--device", "cpu"}),
                      Contains("--predict with --explain does not use --device"));
  // Both requests run: the pictures of --explain and the prediction of --predict.
  REQUIRE(run({"--out", out, "--explain", "win a free cruise", "--predict", "win a prize",
               "--quiet"}) == 0);
  CHECK(fs::exists(out + "/explain/layer0_head0.png"));
  fs::remove_all(out);
}

TEST_CASE("hardening: --resume refuses a checkpoint with NaN weights, without blaming --lr",
          "[text_classification]") {
  const std::string out = fresh("nan_resume");
  REQUIRE(run(tiny(out, {"--max-steps", "4"})) == 0);
  const std::string path = tg::nn::checkpoint_model_path(out + "/last");
  tg::nn::SafetensorsFile f = tg::nn::load_safetensors(path);
  tg::nn::StateDict poisoned;
  for (const auto& [name, t] : f.tensors)
    poisoned.insert(name, name.find("head") != std::string::npos ? tg::full_like(t, NAN) : t);
  tg::nn::save_safetensors(path, poisoned, f.metadata);
  try {
    run(tiny(out, {"--resume"}));
    FAIL("resumed from NaN weights");
  } catch (const tgx::UserError& e) {
    const std::string msg = e.what();
    CHECK_THAT(msg, Contains("--resume: " + out + "/last: weight head"));
    CHECK_THAT(msg, Contains("holds NaN or infinite values"));
    CHECK_THAT(msg, !Contains("--lr"));
  }
  fs::remove_all(out);
}
