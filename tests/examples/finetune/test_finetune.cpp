// tests/examples/finetune/test_finetune.cpp — the finetune program end to end through run() on
// tiny seeded folders of both families (written by --make-seeded with the npm tokenizers) and the
// committed fixture corpus: LoRA and full runs (metrics.json, the adapter in PEFT's layout that
// load_adapter reads back, the saved model folder that loads and trains again, bf16 autocast),
// --resume giving exactly the uninterrupted run's losses and adapter bytes (GPT-2's dropout
// draws from the restored generator), and the refusals (a finished run, a changed option on
// --resume, LoRA options with --full, bad values, a seeded folder over an existing one).
#include <catch2/catch.hpp>

#include "autograd/io.hpp"
#include "common/cli.hpp"
#include "finetune/app.hpp"
#include "nn/hf/pretrained.hpp"
#include "nn/lora.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

const std::string kFix = std::string(TG_FIXTURES) + "/examples/gpt/fortunes";
const std::string kRoot = std::string(TG_BINARY_DIR) + "/test-finetune";

// A seeded folder of the family (d 32, 2 layers) for one test case (`tag`): ctest runs the cases
// in parallel processes, so each writes its own.
std::string seeded(const std::string& family, const std::string& tag) {
  const std::string dir = kRoot + "/seeded-" + family + "-" + tag;
  if (!fs::exists(dir + "/config.json")) {
    fs::remove_all(dir);
    REQUIRE(
        tgx::finetune::run({"--make-seeded", dir, "--family", family, "--d-model", "32", "--layers",
                            "2", "--heads", family == "gpt2" ? "2" : "4", "--kv-heads", "2"}) == 0);
  }
  return dir;
}

std::string fresh(const std::string& name) {
  const std::string dir = kRoot + "/" + name;
  fs::remove_all(dir);
  return dir;
}

std::vector<std::string> args(const std::string& model, const std::string& out,
                              std::vector<std::string> extra = {}) {
  std::vector<std::string> a = {"--model",        model, "--data",       kFix, "--out",        out,
                                "--steps",        "4",   "--block",      "16", "--batch-size", "2",
                                "--eval-windows", "4",   "--save-every", "2",  "--length",     "5",
                                "--quiet"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

nlohmann::json metrics(const std::string& out) {
  std::ifstream f(out + "/metrics.json");
  REQUIRE(f.good());
  return nlohmann::json::parse(f);
}

std::string bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("finetune: LoRA on seeded GPT-2 and Llama folders writes metrics and a PEFT adapter",
          "[finetune]") {
  for (const std::string family : {"gpt2", "llama"}) {
    const std::string out = fresh("lora-" + family);
    REQUIRE(tgx::finetune::run(args(seeded(family, "lora"), out)) == 0);
    const auto m = metrics(out);
    INFO(family << ": " << m.dump());
    REQUIRE(m["mode"] == "lora");
    REQUIRE(m["losses"].size() == 4);
    const double before = m["heldout_loss_before"], after = m["heldout_loss_after"];
    // A random model guesses near log V (GPT-2 50257, Llama-2 32000 tokens).
    const double logV = std::log(family == "gpt2" ? 50257.0 : 32000.0);
    REQUIRE(std::fabs(before - logV) < 0.5);
    REQUIRE(std::fabs(after - logV) < 0.5);
    REQUIRE(m["trained_parameters"].get<int64_t>() < m["parameters"].get<int64_t>() / 100);
    REQUIRE(fs::is_regular_file(out + "/adapter/adapter_model.safetensors"));
    const auto cfg = tg::nn::read_adapter_config(out + "/adapter/adapter_config.json");
    REQUIRE(cfg.fan_in_fan_out == (family == "gpt2"));
    REQUIRE(cfg.target_modules == (family == "gpt2"
                                       ? std::vector<std::string>{"c_attn"}
                                       : std::vector<std::string>{"q_proj", "v_proj"}));
    // The adapter applies to the folder's model as PEFT's would: PEFT's keys, the right shapes.
    auto model = tg::nn::hf::from_pretrained(seeded(family, "lora"));
    tg::nn::load_adapter(out + "/adapter", *model);
    REQUIRE(tg::nn::lora_layers(*model).size() == (family == "gpt2" ? 2u : 4u));  // 2 layers
    REQUIRE(fs::is_regular_file(out + "/last/model.safetensors"));
  }
}

TEST_CASE("finetune: --resume continues exactly where the run stopped", "[finetune]") {
  // GPT-2's config has dropout 0.1: the masks come from the generator the checkpoint restores.
  const std::string whole = fresh("resume-whole"), part = fresh("resume-part");
  const auto extra = std::vector<std::string>{"--lora-dropout", "0.1"};
  REQUIRE(tgx::finetune::run(args(seeded("gpt2", "resume"), whole, extra)) == 0);
  auto stopped = extra;
  stopped.insert(stopped.end(), {"--max-steps", "2"});
  REQUIRE(tgx::finetune::run(args(seeded("gpt2", "resume"), part, stopped)) == 0);
  REQUIRE_FALSE(fs::exists(part + "/metrics.json"));
  auto resumed = extra;
  resumed.push_back("--resume");
  REQUIRE(tgx::finetune::run(args(seeded("gpt2", "resume"), part, resumed)) == 0);
  REQUIRE(metrics(part)["losses"] == metrics(whole)["losses"]);
  REQUIRE(metrics(part)["heldout_loss_after"] == metrics(whole)["heldout_loss_after"]);
  REQUIRE(metrics(part)["sample"] == metrics(whole)["sample"]);
  REQUIRE(bytes(part + "/adapter/adapter_model.safetensors") ==
          bytes(whole + "/adapter/adapter_model.safetensors"));
  // A changed option is another run.
  REQUIRE_THROWS_WITH(
      tgx::finetune::run(args(seeded("gpt2", "resume"), part, {"--resume", "--lr", "0.01"})),
      Contains("is from another run") && Contains("lr: checkpoint 0.001, now 0.01"));
  // A finished run is not replaced by accident.
  REQUIRE_THROWS_WITH(tgx::finetune::run(args(seeded("gpt2", "resume"), whole, extra)),
                      Contains("holds a run") && Contains("--overwrite"));
  REQUIRE(tgx::finetune::run(args(seeded("gpt2", "resume"), whole, {"--overwrite"})) == 0);
}

TEST_CASE("finetune: full fine-tuning under bf16 autocast saves a model folder that trains again",
          "[finetune]") {
  const std::string out = fresh("full-llama");
  REQUIRE(tgx::finetune::run(args(seeded("llama", "full"), out,
                                  {"--full", "--precision", "bf16", "--lr", "0.003"})) == 0);
  const auto m = metrics(out);
  REQUIRE(m["mode"] == "full");
  REQUIRE(m["trained_parameters"] == m["parameters"]);
  REQUIRE(m["heldout_loss_after"].get<double>() < m["heldout_loss_before"].get<double>());
  for (const char* f : {"config.json", "model.safetensors", "tokenizer.json"})
    REQUIRE(fs::is_regular_file(out + "/model/" + f));
  const std::string again = fresh("full-llama-again");
  REQUIRE(tgx::finetune::run(args(out + "/model", again, {"--steps", "1", "--warmup", "0"})) == 0);
  // The saved model is where the run left it: its loss before is the first run's loss after
  // (both in float32 here, so evaluated again without autocast).
  REQUIRE(metrics(again)["heldout_loss_before"].get<double>() ==
          Approx(m["heldout_loss_after"].get<double>()).epsilon(0.02));
}

TEST_CASE("finetune: bad options and folders are refused, naming them", "[finetune]") {
  const std::string g = seeded("gpt2", "refusals"), out = fresh("refusals");
  auto refuses = [&](std::vector<std::string> extra, const std::string& msg) {
    INFO(msg);
    REQUIRE_THROWS_WITH(tgx::finetune::run(args(g, out, extra)), Contains(msg));
  };
  refuses({"--full", "--lora", "4"}, "--lora is a LoRA option; --full trains every parameter");
  refuses({"--precision", "f16"}, "--precision f16: must be f32 or bf16");
  refuses({"--block", "100000"}, "--block 100000: the model has 512 positions");
  refuses({"--target", "q_proj"}, "--target: apply_lora: target modules [q_proj] not found");
  refuses({"--lr", "0"}, "--lr 0");
  refuses({"--resume"}, "holds no checkpoint to resume");
  REQUIRE_THROWS_WITH(tgx::finetune::run({"--make-seeded", g}), Contains("already holds a model"));
  REQUIRE_THROWS_WITH(tgx::finetune::run({"--make-seeded", out, "--family", "bert"}),
                      Contains("--family bert: must be gpt2 or llama"));
  REQUIRE_THROWS_WITH(tgx::finetune::run({"--make-seeded", out, "--steps", "3"}),
                      Contains("--steps"));
  REQUIRE_THROWS_WITH(tgx::finetune::run({"--steps", "3"}), Contains("--model"));
}
