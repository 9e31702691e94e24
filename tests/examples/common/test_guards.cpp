// tests/examples/common/test_guards.cpp — the run folder guard (a fresh run refused over a
// finished one, --overwrite removing only the program's own files), the refusal of options a
// mode does not use, the effective options the ranks compare, the blown-up loss check and the
// non-finite weights check (issue 23).
#include "common/cli.hpp"
#include "common/guard.hpp"
#include "common/run_folder.hpp"
#include "common/text.hpp"
#include "nn/layers.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>

using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {
std::string fresh(const std::string& name) {
  const std::string d = std::string(TG_BINARY_DIR) + "/test-guards/" + name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}
void touch(const std::string& path, const std::string& text = "x") {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
}
}  // namespace

TEST_CASE("claim_run_folder: a run is refused without --resume or --overwrite",
          "[examples][common]") {
  const std::string out = fresh("claim");
  tgx::claim_run_folder(out, false, false, {});  // an empty folder is free
  tgx::claim_run_folder(out + "/not-yet", false, false, {});
  touch(out + "/notes.txt");  // a user's file alone is no run
  tgx::claim_run_folder(out, false, false, {});
  touch(out + "/metrics.json", "{}");
  touch(out + "/best/model.safetensors", "weights");
  touch(out + "/best/my-notes.txt", "mine");
  touch(out + "/last.new/model.safetensors", "weights");
  touch(out + "/loss_curve.png", "png");
  REQUIRE_THROWS_AS(tgx::claim_run_folder(out, false, false, {}), tgx::UserError);
  REQUIRE_THROWS_WITH(tgx::claim_run_folder(out, false, false, {}),
                      Contains("--out " + out +
                               " holds a run (last.new/model.safetensors, best/model.safetensors, "
                               "metrics.json)") &&
                          Contains("--resume") && Contains("--overwrite"));
  REQUIRE_THROWS_WITH(tgx::claim_run_folder(out, true, true, {}),
                      Contains("--resume and --overwrite contradict each other"));
  tgx::claim_run_folder(out, true, false, {});  // --resume: the caller checks last/
  CHECK(fs::exists(out + "/metrics.json"));
  // --overwrite removes exactly the listed files; a folder keeps what is not ours.
  std::vector<std::string> own = tgx::common_run_files();
  own.push_back("loss_curve.png");
  tgx::claim_run_folder(out, false, true, own);
  CHECK_FALSE(fs::exists(out + "/metrics.json"));
  CHECK_FALSE(fs::exists(out + "/best/model.safetensors"));
  CHECK_FALSE(fs::exists(out + "/last.new"));  // emptied, so removed
  CHECK_FALSE(fs::exists(out + "/loss_curve.png"));
  CHECK(tgx::read_file(out + "/best/my-notes.txt") == "mine");
  CHECK(tgx::read_file(out + "/notes.txt") == "x");
  tgx::claim_run_folder(out, false, false, own);  // now free
}

TEST_CASE("refuse_unused names the options a mode ignores", "[examples][common]") {
  tgx::ArgParser p("prog", "x");
  p.option("out", "runs/x", "").option("lr", "1", "").option("epochs", "2", "");
  p.option("predict", "", "").option("threads", "0", "").flag("resume", "").flag("quiet", "");
  const char* argv[] = {"prog",     "--predict", "hi",        "--lr", "2",
                        "--resume", "--quiet",   "--threads", "1"};
  REQUIRE(p.parse(9, argv));
  CHECK(p.given_names() == std::vector<std::string>{"lr", "predict", "threads", "resume", "quiet"});
  REQUIRE_THROWS_WITH(tgx::refuse_unused(p, "--predict", {"predict", "out"}),
                      Contains("--predict does not use --lr, --resume"));
  tgx::refuse_unused(p, "--predict", {"predict", "lr", "resume"});
  // The effective options: every declared one, given or default, flags "1" or "".
  nlohmann::json j = nlohmann::json::parse(p.effective_json());
  CHECK(j["lr"] == "2");
  CHECK(j["epochs"] == "2");
  CHECK(j["out"] == "runs/x");
  CHECK(j["resume"] == "1");
  CHECK(j.size() == 7);
  // Without mpirun every process answers (the rank variables are absent here).
  CHECK_FALSE(tgx::inference_elsewhere());
  tgx::require_same_options_on_every_rank(p);  // one process: nothing to compare
}

TEST_CASE("blown_up: a mean loss far above a uniform guess", "[examples][common]") {
  const double u = std::log(60.0);
  CHECK(tgx::blown_up({}, 0, 60).empty());
  CHECK(tgx::blown_up({4.2, 3.0, 2.5}, 0, 60).empty());      // learning
  CHECK(tgx::blown_up({4.1, 650.0, 700.0}, 3, 60).empty());  // nothing new since the last check
  const std::string why = tgx::blown_up({4.1, 650.0, 700.0}, 1, 60);
  CHECK_THAT(why, Contains("training diverged: the mean loss of steps 2-3 is 675"));
  CHECK_THAT(why, Contains("uniform guess among 60 outcomes"));
  CHECK(tgx::blown_up({tgx::kBlownUpFactor * u * 0.99}, 0, 60).empty());
  CHECK_FALSE(tgx::blown_up({tgx::kBlownUpFactor * u * 1.01}, 0, 60).empty());
  CHECK(tgx::blown_up({NAN, 1.0}, 0, 2).empty());  // a NaN is the per-step guard's to report
}

TEST_CASE("require_finite_weights names the first broken weight", "[examples][common]") {
  tg::nn::Linear lin(3, 2);
  tgx::require_finite_weights(lin, "m", "no");
  lin.bias.data<float>()[1] = INFINITY;
  REQUIRE_THROWS_AS(tgx::require_finite_weights(lin, "x.safetensors", "refusing"), tgx::UserError);
  REQUIRE_THROWS_WITH(tgx::require_finite_weights(lin, "x.safetensors", "refusing"),
                      Contains("x.safetensors: weight bias holds NaN or infinite values") &&
                          Contains("; refusing"));
}

TEST_CASE("claim_run_folder --overwrite never removes the run folder itself",
          "[examples][common]") {
  const std::string out = fresh("claim_self") + "/";  // a trailing slash, as a shell completes it
  touch(out + "metrics.json", "{}");
  tgx::claim_run_folder(out, false, true, tgx::common_run_files());
  CHECK_FALSE(fs::exists(out + "metrics.json"));
  CHECK(fs::is_directory(out));  // emptied, but still there
}
