// tests/examples/text_classification/test_training.cpp — seeded smoke runs of the whole program
// through its library entry point (tgx::cls::run) on the committed samples: the loss falls,
// checkpoints and pictures are written, --resume continues from the saved step exactly,
// predictions are probabilities, a checkpoint from another config is refused; and the
// program's bad-input paths.
#include <catch2/catch.hpp>

#include "common/cli.hpp"
#include "common/text.hpp"
#include "tiny_run.hpp"
#include "text_classification/app.hpp"
#include "text_classification/train.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <numeric>

using namespace tgx::cls;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

using namespace tgt::cls;

TEST_CASE("training: a seeded smoke run learns and writes its outputs", "[text_classification]") {
  std::string out = fresh_dir("smoke");
  REQUIRE(run(tiny(out)) == 0);
  nlohmann::json m = metrics(out);
  std::vector<double> loss = m["history"]["train_loss"].get<std::vector<double>>();
  REQUIRE(loss.size() == 18);  // 24 training emails / 8 = 3 steps per epoch, 6 epochs
  INFO("first losses " << mean(loss, 0, 3) << ", last " << mean(loss, 15, 3));
  CHECK(mean(loss, 15, 3) < 0.8 * mean(loss, 0, 3));
  CHECK(m["epochs_run"] == 6);
  CHECK(m["history"]["val_acc"].size() == 6);
  // The reported accuracies are the ones their confusion matrices give (on the same test split).
  auto from_matrix = [](const nlohmann::json& cm) {
    double right = 0, all = 0;
    for (size_t i = 0; i < cm.size(); ++i)
      for (size_t j = 0; j < cm[i].size(); ++j) {
        all += cm[i][j].get<double>();
        if (i == j) right += cm[i][j].get<double>();
      }
    return std::make_pair(right / all, all);
  };
  auto [acc, n] = from_matrix(m["transformer"]["confusion_matrix"]);
  auto [base_acc, base_n] = from_matrix(m["baseline"]["confusion_matrix"]);
  CHECK(m["test_accuracy"].get<double>() == Approx(acc));
  CHECK(m["baseline_accuracy"].get<double>() == Approx(base_acc));
  CHECK(n == base_n);
  CHECK(n == 4);  // the seeded, stratified test split of the 30 sample emails
  CHECK(m["transformer"]["per_class"].size() == 2);
  for (const char* f : {"/tokenizer.json", "/best/model.safetensors", "/last/model.safetensors",
                        "/last/training_state.safetensors", "/loss_curve.png",
                        "/attention/layer0_head0.png", "/attention/layer0_head1.png"})
    CHECK(tgx::file_exists(out + f));

  {  // predict gives probabilities that sum to 1
    Prediction p = predict(out, {"FREE money!!! click here now", "the meeting notes are attached"});
    REQUIRE(p.class_names == std::vector<std::string>{"ham", "spam"});
    REQUIRE(p.probs.size() == 2);
    for (const auto& row : p.probs) {
      CHECK(row[0] >= 0.0);
      CHECK(row[1] >= 0.0);
      CHECK(row[0] + row[1] == Approx(1.0).epsilon(1e-6));
    }
    CHECK(run({"--out", out, "--predict", "win a prize"}) == 0);
    REQUIRE_THROWS_WITH(run({"--out", out, "--predict", ""}), Contains("empty"));
    REQUIRE_THROWS_WITH(predict(out, {"bad \xFF"}), Contains("UTF-8"));
  }
  {  // a checkpoint from another config or run is refused with a clear message
    REQUIRE_THROWS_AS(run(tiny(out, {"--resume", "--d-model", "32"})), tgx::UserError);
    REQUIRE_THROWS_WITH(
        run(tiny(out, {"--resume", "--d-model", "32", "--heads", "4"})),
        Contains("another model") && Contains("d_model 16 vs 32") && Contains("heads 2 vs 4"));
    REQUIRE_THROWS_WITH(run(tiny(out, {"--resume", "--seed", "4"})), Contains("seed"));
    // A tokenizer from another vocabulary does not fit the saved model.
    std::string other = fresh_dir("other_vocab");
    REQUIRE(run(tiny(other, {"--vocab-size", "300", "--max-steps", "1"})) == 0);
    fs::copy_file(other + "/tokenizer.json", out + "/tokenizer.json",
                  fs::copy_options::overwrite_existing);
    REQUIRE_THROWS_WITH(predict(out, {"hello"}), Contains("different runs"));
    REQUIRE_THROWS_WITH(run(tiny(out, {"--resume"})), Contains("vocab_size"));
    fs::remove_all(other);
  }
  fs::remove_all(out);
}

TEST_CASE("training: --resume continues a stopped run exactly", "[text_classification]") {
  std::string a = fresh_dir("full"), b = fresh_dir("resumed");
  REQUIRE(run(tiny(a, {"--epochs", "3"})) == 0);
  REQUIRE(run(tiny(b, {"--epochs", "3", "--max-steps", "4"})) == 0);  // stops mid-epoch 2
  CHECK(metrics(b)["steps"] == 4);
  REQUIRE_THROWS_WITH(run(tiny(fresh_dir("none"), {"--resume"})), Contains("no checkpoint"));
  REQUIRE(run(tiny(b, {"--epochs", "3", "--resume"})) == 0);
  std::vector<double> la = metrics(a)["history"]["train_loss"].get<std::vector<double>>();
  std::vector<double> lb = metrics(b)["history"]["train_loss"].get<std::vector<double>>();
  REQUIRE(la.size() == 9);
  REQUIRE(lb.size() == 9);
  for (size_t i = 0; i < la.size(); ++i) CHECK(lb[i] == Approx(la[i]).epsilon(1e-5));
  CHECK(metrics(b)["test_accuracy"] == metrics(a)["test_accuracy"]);
  fs::remove_all(a);
  fs::remove_all(b);
}

TEST_CASE("training: fortunes sample runs end to end", "[text_classification]") {
  std::string out = fresh_dir("fortunes");
  REQUIRE(run({"--dataset", "fortunes",  "--data-dir", kFix + "/fortunes", "--out", out,
               "--quiet",   "--epochs",  "2",          "--batch-size",     "8",     "--d-model",
               "16",        "--layers",  "1",          "--heads",          "2",     "--ff",
               "32",        "--max-len", "32",         "--vocab-size",     "300"}) == 0);
  nlohmann::json m = metrics(out);
  CHECK(m["classes"].size() == 7);
  CHECK(m["examples"]["test"] == 7);
  CHECK(m["transformer"]["per_class"].size() == 7);
  CHECK(tgx::file_exists(out + "/attention/layer0_head1.png"));
  // --explain draws a new text's maps from the saved run, without training.
  REQUIRE(run({"--out", out, "--explain", "A computer scientist walks into a bar"}) == 0);
  CHECK(tgx::file_exists(out + "/explain/layer0_head1.png"));
  fs::remove_all(out);
}

TEST_CASE("program: bad input is a user error with a clear message", "[text_classification]") {
  std::string out = fresh_dir("bad");
  REQUIRE_THROWS_WITH(run({"--dataset", "poems", "--out", out}),
                      Contains("--dataset poems") && Contains("spam, fortunes"));
  REQUIRE_THROWS_WITH(run({"--data-dir", "/no/such/dir", "--out", out}),
                      Contains("/no/such/dir") && Contains("no such folder"));
  REQUIRE_THROWS_WITH(run({"--out", out, "--predict", "hello"}), Contains("no trained model"));
  REQUIRE_THROWS_WITH(run({"--out", out, "--predict", "  "}), Contains("empty"));
  REQUIRE_THROWS_WITH(run({"--epochs", "x"}), Contains("--epochs"));
  REQUIRE_THROWS_WITH(run({"--d-model", "30", "--heads", "4", "--data-dir", kFix + "/spam", "--out",
                           out, "--quiet"}),
                      Contains("divisible"));
  REQUIRE_THROWS_WITH(run({"--data-dir", kFix + "/spam", "--out", out, "--limit", "4", "--quiet"}),
                      Contains("too few"));
  CHECK(run({"--help"}) == 0);
  fs::remove_all(out);
}
