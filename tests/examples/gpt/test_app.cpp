// tests/examples/gpt/test_app.cpp — the gpt program end to end through run() on the committed
// fixture corpus: a short run (the loss falls, metrics.json holds real values, best/ and last/
// exist), seeded sampling from the saved run, --resume giving exactly the losses of an
// uninterrupted run, the model's causality and sliding window, and bad options refused with
// their allowed range; a finished run refused without --resume or --overwrite, --sample's unused
// options refused, a blown-up loss stopped, NaN weights refused by --resume, the loss curve's
// final figure and axis (issue 23).
#include <catch2/catch.hpp>

#include "autograd/tape.hpp"
#include "common/cli.hpp"
#include "common/png.hpp"
#include "common/text.hpp"
#include "gpt/app.hpp"
#include "gpt/model.hpp"
#include "gpt/report.hpp"
#include "gpt/sample.hpp"
#include "gpt/train.hpp"
#include "nn/checkpoint.hpp"
#include "ops/core/cpu/kernels.hpp"
#include "ops/ops.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>

using namespace tgx::gpt;
using Catch::Matchers::Contains;

namespace {

const std::string kFix = std::string(TG_FIXTURES) + "/examples/gpt/fortunes";

std::string fresh_dir(const std::string& name) {
  std::string dir = std::string(TG_BINARY_DIR) + "/test-gpt/" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::vector<std::string> tiny_args(const std::string& out) {
  return {"--data-dir",
          kFix,
          "--block",
          "32",
          "--d-model",
          "32",
          "--layers",
          "2",
          "--heads",
          "2",
          "--batch-size",
          "8",
          "--steps",
          "40",
          "--warmup",
          "5",
          "--lr",
          "0.005",
          "--eval-every",
          "10",
          "--eval-windows",
          "8",
          "--samples",
          "2",
          "--length",
          "40",
          "--quiet",
          "--out",
          out};
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

TEST_CASE("gpt: a short run trains, reports, samples and resumes exactly", "[gpt]") {
  const std::string full = fresh_dir("full"), part = fresh_dir("part");
  REQUIRE(run(tiny_args(full)) == 0);
  nlohmann::json m = read_json(full + "/metrics.json");
  CHECK(m["steps_done"] == 40);
  auto loss = m["history"]["loss"].get<std::vector<double>>();
  REQUIRE(loss.size() == 40);
  CHECK(mean(loss, 35, 40) < 0.8 * mean(loss, 0, 5));  // the loss falls (4.5 -> 3.0 here)
  CHECK(m["history"]["eval_step"] == std::vector<int64_t>{10, 20, 30, 40});
  auto held = m["history"]["eval_heldout"].get<std::vector<double>>();
  CHECK(held.back() < held.front());
  const double best = m["best_heldout_windows_nats_per_char"].get<double>();
  CHECK(best == *std::min_element(held.begin(), held.end()));
  // The best model on the whole held-out text (goedel, 821 characters).
  CHECK(m["heldout_nats_per_char"].get<double>() > 1.0);
  CHECK(m["heldout_nats_per_char"].get<double>() < held.front());
  CHECK(m["baseline_heldout_nats_per_char"].get<double>() > 0.5);
  CHECK(m["baseline_heldout_nats_per_char"].get<double>() < std::log(60.0));
  CHECK(m["split"]["heldout_files"] == std::vector<std::string>{"goedel"});
  // what the figures depend on besides the options (tools/results.py prints the BLAS core)
  CHECK(m["environment"]["blas_core"].get<std::string>().size() > 0);
  CHECK(m["environment"]["simd"].get<std::string>() == tg::cpu::simd_kernels());
  CHECK(m["environment"]["world_size"] == 1);
  CHECK(m["split"]["train_chars"].get<int64_t>() + m["split"]["heldout_chars"].get<int64_t>() >
        6000);
  CHECK(m["parameters"].get<int64_t>() > 20000);
  CHECK(m["samples"].size() == 2);
  CHECK(m["samples"][0].get<std::string>().size() >= 40);
  CHECK(m["train_seconds"].get<double>() > 0);
  CHECK(tgx::file_exists(full + "/best/model.safetensors"));
  CHECK(tgx::file_exists(full + "/last/training_state.safetensors"));
  CHECK(tgx::file_exists(full + "/samples.txt"));
  CHECK(tgx::read_png(full + "/loss_curve.png").width == 800);

  // Sampling from the saved run is seeded: the same seed gives the same text.
  SavedModel s = load_best(full);
  CHECK(s.step == m["best_step"].get<int64_t>());
  SampleOptions so;
  so.length = 60;
  so.top_k = 5;
  auto draw = [&](uint64_t seed) {
    tg::manual_seed(seed);
    return s.vocab.decode(generate(*s.model, s.vocab.encode("The "), so));
  };
  const std::string a = draw(3);
  CHECK(tgx::utf8_chars(a).size() == 60);
  CHECK(draw(3) == a);
  CHECK(draw(4) != a);
  // The whole-text evaluation of one window is that window's evaluation.
  std::vector<int64_t> ids = s.vocab.encode(std::string(33, 'e') + "abc");
  ids.resize(33);
  CHECK(evaluate_text(*s.model, ids, 4, tg::kCPU) ==
        Approx(evaluate(*s.model, ids, {0}, 4, tg::kCPU)).epsilon(1e-6));
  REQUIRE(run({"--out", full, "--sample", "The ", "--seed", "3", "--length", "20", "--top-k",
               "5"}) == 0);
  REQUIRE_THROWS_WITH(run({"--out", full, "--sample", "caf\xC3\xA9 \xE2\x82\xAC"}),
                      Contains("--sample") && Contains("not in the model's vocabulary"));
  REQUIRE_THROWS_WITH(run({"--out", full + "/none", "--sample", "x"}),
                      Contains("no trained model"));

  // Stopped at step 20 by --max-steps, then resumed: the same 40 losses as the full run.
  REQUIRE(run(with(tiny_args(part), {"--max-steps", "20"})) == 0);
  CHECK(read_json(part + "/metrics.json")["steps_done"] == 20);
  REQUIRE(run(with(tiny_args(part), {"--resume"})) == 0);
  nlohmann::json r = read_json(part + "/metrics.json");
  CHECK(r["steps_done"] == 40);
  CHECK(r["history"]["loss"].get<std::vector<double>>() == loss);
  CHECK(r["history"]["eval_heldout"].get<std::vector<double>>() == held);
  // A checkpoint from another run is refused, naming the difference.
  REQUIRE_THROWS_WITH(run(with(tiny_args(part), {"--resume", "--lr", "0.001"})),
                      Contains("another run") && Contains("lr"));
  REQUIRE_THROWS_WITH(run(with(tiny_args(fresh_dir("empty")), {"--resume"})),
                      Contains("no checkpoint"));
}

TEST_CASE("gpt: bad options are refused with the allowed range", "[gpt]") {
  const std::string out = fresh_dir("bad");
  auto refused = [&](const std::vector<std::string>& extra, const std::string& msg) {
    INFO(msg);
    REQUIRE_THROWS_AS(run(with(tiny_args(out), extra)), tgx::UserError);
    REQUIRE_THROWS_WITH(run(with(tiny_args(out), extra)), Contains(msg));
  };
  refused({"--block", "0"}, "--block 0: must be in [1, 65536]");
  refused({"--d-model", "-4"}, "--d-model -4: must be in [1, 8192]");
  refused({"--layers", "0"}, "--layers 0: must be in [1, 128]");
  refused({"--heads", "3"}, "--d-model 32 must be divisible by --heads 3");
  refused({"--window", "33"}, "--window 33: must be in [0, 32]");
  refused({"--dropout", "1"}, "--dropout 1: must be < 1");
  refused({"--dropout", "-0.1"}, "--dropout -0.1: must be in [0, 1]");
  refused({"--lr", "0"}, "--lr 0: must be in (0, 10]");
  refused({"--batch-size", "0"}, "--batch-size 0: must be in [1, 65536]");
  refused({"--warmup", "50"}, "--warmup 50: must be in [0, 40] (at most --steps)");
  refused({"--eval-every", "0"}, "--eval-every 0: must be in [1, 100000000]");
  refused({"--clip", "-1"}, "--clip -1: must be in [0, 1000000] (0: off)");
  refused({"--patience", "-1"}, "--patience -1: must be in [0, 1000000] (0: off)");
  refused({"--max-steps", "-2"}, "--max-steps -2: must be in [0, 100000000]");
  refused({"--seed", "-1"}, "--seed -1: must be >= 0");
  refused({"--temperature", "0"}, "--temperature 0: must be in (0, 100]");
  refused({"--top-k", "-1"}, "--top-k -1: must be in [0, 1000000] (0: off)");
  refused({"--device", "tpu"}, "tpu");
  refused({"--block", "900"}, "too short for windows of --block 900");
  refused({"--data-dir", kFix + "/missing"}, "no such folder");
  refused({"--arch", "mamba"}, "--arch mamba: must be gpt or llama");
  refused({"--kv-heads", "2"}, "--kv-heads: only with --arch llama");
  refused({"--arch", "llama", "--kv-heads", "3"}, "--kv-heads 3: must be in [0, 2] (0: --heads)");
  refused({"--arch", "llama", "--heads", "1", "--d-model", "31"},
          "the head size --d-model / --heads = 31 must be even");
  // issue 40: llama's block is bounded by its rotary table, refused before any data is read
  refused({"--arch", "llama", "--block", "9000", "--data-dir", kFix + "/missing"},
          "--block 9000: must be in [1, 8192] (--arch llama: the rotary table's positions)");
  refused({"--block", "70000"}, "--block 70000: must be in [1, 65536]");
  REQUIRE_THROWS_WITH(run({"--out", out, "--sample", "x", "--temperature", "-1"}),
                      Contains("--temperature -1: must be in (0, 100]"));
}

TEST_CASE("gpt model: causal, and the sliding window sees only the last W keys", "[gpt]") {
  GptConfig c;
  c.vocab_size = 11;
  c.block = 12;
  c.d_model = 16;
  c.layers = 2;
  c.heads = 2;
  c.ff = 32;
  tg::manual_seed(5);
  Gpt full(c);
  c.window = 3;
  Gpt windowed(c);
  windowed.load_state_dict(full.state_dict());  // the same weights, only the mask differs
  c.window = 12;
  Gpt whole(c);
  whole.load_state_dict(full.state_dict());
  c.tie_weights = true;
  Gpt tied(c);
  CHECK(tied.num_parameters() == full.num_parameters() - 11 * 16);  // no separate head
  CHECK(tied.head_weight().same(tied.tok_emb->weight));
  full.eval();
  windowed.eval();
  whole.eval();
  tg::NoGradGuard ng;
  std::vector<int64_t> ids = {1, 4, 2, 8, 5, 7, 3, 9, 10, 6, 2, 1};
  auto logits = [&](Gpt& m, const std::vector<int64_t>& x) {
    return m.forward(tg::tensor(x, {1, 12})).to_vector<double>();  // (1, 12, 11) flat
  };
  std::vector<double> base = logits(full, ids);
  CHECK(logits(whole, ids) == base);  // a window of T keys is full causal attention
  // Changing position 7 leaves the logits of positions 0..6 as they were (causal).
  std::vector<int64_t> changed = ids;
  changed[7] = 0;
  std::vector<double> after = logits(full, changed);
  CHECK(std::equal(base.begin(), base.begin() + 7 * 11, after.begin()));
  CHECK(!std::equal(base.begin() + 7 * 11, base.begin() + 8 * 11, after.begin() + 7 * 11));
  // With W = 3 and 2 layers, position i sees positions >= i - 2·(3 - 1): changing position 0
  // reaches position 4 but not position 5 (nor any later one).
  std::vector<double> w0 = logits(windowed, ids);
  changed = ids;
  changed[0] = 3;
  std::vector<double> w1 = logits(windowed, changed);
  CHECK(std::equal(w0.begin() + 5 * 11, w0.end(), w1.begin() + 5 * 11));
  CHECK(!std::equal(w0.begin() + 4 * 11, w0.begin() + 5 * 11, w1.begin() + 4 * 11));
  CHECK(!std::equal(base.begin() + 11 * 11, base.end(), w0.begin() + 11 * 11));
}

// ---- issue 23: the run folder guard, inference options, divergence, the loss curve ----

namespace {
std::vector<std::string> short_args(const std::string& out) {
  return with(tiny_args(out), {"--steps", "10", "--warmup", "2", "--eval-every", "5"});
}
}  // namespace

TEST_CASE("gpt: a finished run is not replaced without --resume or --overwrite", "[gpt]") {
  const std::string out = fresh_dir("guard");
  REQUIRE(run(short_args(out)) == 0);
  const std::string before = tgx::read_file(out + "/metrics.json");
  std::ofstream(out + "/notes.txt") << "mine";
  REQUIRE_THROWS_AS(run(short_args(out)), tgx::UserError);
  REQUIRE_THROWS_WITH(run(short_args(out)), Contains("--out " + out + " holds a run") &&
                                                Contains("--resume") && Contains("--overwrite"));
  CHECK(tgx::read_file(out + "/metrics.json") == before);
  REQUIRE_THROWS_WITH(run(with(short_args(out), {"--resume", "--overwrite"})),
                      Contains("contradict"));
  REQUIRE(run(with(short_args(out), {"--overwrite", "--seed", "2"})) == 0);
  CHECK(read_json(out + "/metrics.json")["training"]["seed"] == 2);
  CHECK(tgx::read_file(out + "/notes.txt") == "mine");  // not the program's: kept
}

TEST_CASE("gpt: --sample refuses the options it does not use", "[gpt]") {
  const std::string out = fresh_dir("sample-opts");
  REQUIRE(run(short_args(out)) == 0);
  REQUIRE_THROWS_WITH(run({"--out", out, "--sample", "The ", "--lr", "0.1", "--resume"}),
                      Contains("--sample does not use --lr, --resume"));
  REQUIRE_THROWS_WITH(run({"--out", out, "--sample", "The ", "--steps", "3"}),
                      Contains("--sample does not use --steps"));
  REQUIRE(run({"--out", out, "--sample", "The ", "--length", "5", "--seed", "2", "--quiet",
               "--temperature", "0.5", "--top-k", "3", "--threads", "1"}) == 0);
}

TEST_CASE("gpt: a loss that blows up without NaN stops the run, --resume checks the weights",
          "[gpt]") {
  const std::string out = fresh_dir("blowup");
  try {
    run(with(short_args(out), {"--lr", "10", "--clip", "0"}));
    FAIL("a run at --lr 10 --clip 0 finished");
  } catch (const tg::Error& e) {
    const std::string msg = e.what();
    CHECK_THAT(msg, Contains("training diverged: the mean loss of steps 1-5 is"));
    CHECK_THAT(msg, Contains("uniform guess"));
    CHECK_THAT(msg, Contains("Lower --lr (now 10)"));
    CHECK_THAT(msg, Contains("(at step 5); no checkpoint was written yet"));
  }
  CHECK_FALSE(tgx::file_exists(out + "/metrics.json"));
  CHECK_FALSE(tgx::file_exists(out + "/best/model.safetensors"));  // no best/ of a broken model

  // A checkpoint whose weights are NaN: --resume refuses it without blaming --lr.
  const std::string part = fresh_dir("nan-resume");
  REQUIRE(run(with(short_args(part), {"--max-steps", "5"})) == 0);
  const std::string model = tg::nn::checkpoint_model_path(part + "/last");
  tg::nn::SafetensorsFile f = tg::nn::load_safetensors(model);
  tg::nn::StateDict poisoned;
  for (const auto& [name, t] : f.tensors)
    poisoned.insert(
        name, name == "lm_head.weight" || name == "tok_emb.weight" ? tg::full_like(t, NAN) : t);
  tg::nn::save_safetensors(model, poisoned, f.metadata);
  try {
    run(with(short_args(part), {"--resume"}));
    FAIL("resumed from NaN weights");
  } catch (const tgx::UserError& e) {
    const std::string msg = e.what();
    CHECK_THAT(msg, Contains("--resume: " + part + "/last: weight"));
    CHECK_THAT(msg, Contains("holds NaN or infinite values"));
    CHECK_THAT(msg, !Contains("--lr"));
  }
  // --sample refuses a best/ model with NaN weights too.
  const std::string best = part + "/best/model.safetensors";
  tg::nn::SafetensorsFile g = tg::nn::load_safetensors(best);
  tg::nn::StateDict bad;
  for (const auto& [name, t] : g.tensors)
    bad.insert(name, name == "tok_emb.weight" ? tg::full_like(t, INFINITY) : t);
  tg::nn::save_safetensors(best, bad, g.metadata);
  REQUIRE_THROWS_WITH(run({"--out", part, "--sample", "The "}),
                      Contains(best + ": weight tok_emb.weight holds NaN or infinite values"));
}

TEST_CASE("gpt: the loss curve names the final held-out figure and zooms on the baseline",
          "[gpt]") {
  History h;
  for (int i = 0; i < 100; ++i) h.loss.push_back(4.7 * std::exp(-i / 30.0) + 1.6);
  h.eval_step = {50, 100};
  h.eval_train = {2.1, 1.75};
  h.eval_heldout = {2.2, 1.8};
  const std::string dir = fresh_dir("curve");
  write_loss_curve(dir + "/plain.png", h, 1.7);
  write_loss_curve(dir + "/final.png", h, 1.7, 1.7288, 1.7296);
  const tgx::Image a = tgx::read_png(dir + "/plain.png"), b = tgx::read_png(dir + "/final.png");
  REQUIRE(a.width == b.width);
  // The title (the top rows) differs; the plot below it is the same.
  int title_diff = 0, plot_diff = 0;
  for (int y = 0; y < a.height; ++y)
    for (int x = 0; x < a.width; ++x) {
      const bool d = a.get(x, y).r != b.get(x, y).r || a.get(x, y).g != b.get(x, y).g;
      (y < 26 ? title_diff : plot_diff) += d;
    }
  CHECK(title_diff > 100);
  CHECK(plot_diff == 0);
  // The baseline is a horizontal line inside the plot, not squeezed against its bottom: the
  // axis starts a margin under it (report.cpp: a tenth of the span), so it sits near the bottom.
  int rows_with_line = 0, lowest = 0;
  for (int y = 0; y < b.height; ++y) {
    int n = 0;
    for (int x = 0; x < b.width; ++x) {
      const tgx::RGB c = b.get(x, y);
      n += c.r == 148 && c.g == 103 && c.b == 189;
    }
    if (n > b.width / 2) ++rows_with_line, lowest = y;
  }
  CHECK(rows_with_line >= 1);
  CHECK(lowest < b.height - 45 - 10);  // 45: the x axis' margin
  CHECK(lowest > b.height / 2);        // and the held-out curve has the space above it
  // A baseline above every evaluation (a tiny corpus) stays inside the axis, under its top.
  write_loss_curve(dir + "/high.png", h, 2.5, 1.7288, 2.6);
  const tgx::Image c = tgx::read_png(dir + "/high.png");
  int line_row = -1;
  for (int y = 0; y < c.height && line_row < 0; ++y) {
    int n = 0;
    for (int x = 0; x < c.width; ++x) {
      const tgx::RGB p = c.get(x, y);
      n += p.r == 148 && p.g == 103 && p.b == 189;
    }
    if (n > c.width / 2) line_row = y;
  }
  CHECK(line_row > 60);  // below the title and legend rows and the plot's top edge
}

// ---- issue 25: --arch llama and the KV cache ----

namespace {
GptConfig small_config(const std::string& arch) {
  GptConfig c;
  c.arch = arch;
  c.vocab_size = 11;
  c.block = 8;
  c.d_model = 16;
  c.layers = 2;
  c.heads = 4;
  c.kv_heads = arch == "llama" ? 2 : 0;
  c.ff = 24;
  return c;
}
}  // namespace

TEST_CASE("gpt: cached incremental logits equal the uncached forward, gpt and llama", "[gpt]") {
  for (const std::string arch : {"gpt", "llama"})
    for (int64_t window : {0, 3}) {
      GptConfig c = small_config(arch);
      c.window = window;
      tg::manual_seed(9);
      Gpt m(c);
      m.eval();
      tg::NoGradGuard ng;
      // The GPT stays within its block; llama runs past it (its window, or block keys).
      const int64_t n = arch == "llama" ? 20 : c.block;
      std::vector<int64_t> ids;
      for (int64_t i = 0; i < n; ++i) ids.push_back((i * 7 + 3) % 11);
      tg::Tensor full = m.forward(tg::tensor(ids, {1, n}));  // (1, n, V)
      std::vector<tg::nn::KVCache> caches = m.make_caches();
      std::vector<tg::Tensor> steps{m.forward(
          tg::tensor(std::vector<int64_t>(ids.begin(), ids.begin() + 3), {1, 3}), caches)};
      for (int64_t t = 3; t < n; ++t)
        steps.push_back(m.forward(tg::tensor(std::vector<int64_t>{ids[t]}, {1, 1}), caches));
      const std::vector<double> a = tg::cat(steps, 1).to_vector<double>(),
                                b = full.to_vector<double>();
      REQUIRE(a.size() == b.size());
      double worst = 0;
      for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
      INFO(arch << " window " << window << ": max |cached - uncached| " << worst);
      CHECK(worst < 1e-5);  // float32: different reduction orders only
      if (arch == "gpt") {
        REQUIRE_THROWS_WITH(m.forward(tg::tensor(std::vector<int64_t>{1}, {1, 1}), caches),
                            Contains("at most 8 positions in all"));
      }
    }
  // generate: the same seed gives the same text with and without the cache, past the block
  for (const std::string arch : {"gpt", "llama"}) {
    tg::manual_seed(10);
    Gpt m(small_config(arch));
    SampleOptions so;
    so.length = 30;
    so.temperature = 0.7;
    tg::manual_seed(3);
    std::vector<int64_t> with_cache = generate(m, {1, 2}, so);
    so.kv_cache = false;
    tg::manual_seed(3);
    std::vector<int64_t> without = generate(m, {1, 2}, so);
    CHECK(with_cache == without);
    CHECK(with_cache.size() == 30);
  }
}

TEST_CASE("gpt: --arch llama trains, saves its config and samples from the saved run", "[gpt]") {
  const std::string out = fresh_dir("llama");
  REQUIRE(run(with(short_args(out), {"--arch", "llama", "--kv-heads", "1", "--quiet"})) == 0);
  std::ifstream f(out + "/metrics.json");
  nlohmann::json j = nlohmann::json::parse(f);
  CHECK(j["config"]["arch"] == "llama");
  CHECK(j["config"]["kv_heads"] == 1);
  auto loss = j["history"]["loss"].get<std::vector<double>>();
  REQUIRE(loss.size() == 10);
  CHECK(loss.back() < loss.front());
  SavedModel s = load_best(out);
  CHECK(s.model->cfg.is_llama());
  CHECK(s.model->layers->size() == 2);
  REQUIRE(run({"--out", out, "--sample", "a", "--length", "5", "--no-kv-cache"}) == 0);
}

TEST_CASE("gpt: --checkpoint gives the same losses, with dropout, gpt and llama", "[gpt]") {
  for (const std::string arch : {"gpt", "llama"}) {
    INFO(arch);
    const std::string plain = fresh_dir("ckpt-plain-" + arch), ckpt = fresh_dir("ckpt-" + arch);
    std::vector<std::string> base = tiny_args(plain);
    const std::vector<std::string> more{"--dropout", "0.1", "--max-steps", "8", "--arch", arch};
    REQUIRE(run(with(base, more)) == 0);
    REQUIRE(run(with(with(tiny_args(ckpt), more), {"--checkpoint"})) == 0);
    const auto a = read_json(plain + "/metrics.json")["history"]["loss"].get<std::vector<double>>();
    const auto b = read_json(ckpt + "/metrics.json")["history"]["loss"].get<std::vector<double>>();
    REQUIRE(a.size() == 8);
    CHECK(a == b);
  }
}

TEST_CASE("gpt: a bad value in a saved model's config names the file and the field", "[gpt]") {
  // issue 40: it used to be blamed on options (--block) the user never passed
  const std::string out = fresh_dir("bad-config");
  const CharVocab vocab = CharVocab::build("abcdefghij");
  GptConfig c = small_config("llama");
  c.vocab_size = vocab.size();
  tg::manual_seed(11);
  Gpt m(c);
  const std::string path = out + "/best/model.safetensors";
  auto save_with = [&](const std::string& field, nlohmann::json value) {
    nlohmann::json cfg = c.to_json();
    cfg[field] = value;
    std::filesystem::create_directories(out + "/best");
    tg::nn::save_safetensors(path, m.state_dict(),
                             {{"gpt.config", cfg.dump()}, {"gpt.vocab", vocab.to_json()}});
  };
  save_with("block", 8);  // the model as saved: loads
  REQUIRE(load_best(out).cfg.block == 8);
  save_with("block", 9000);
  REQUIRE_THROWS_WITH(
      run({"--out", out, "--sample", "a", "--length", "3"}),
      Contains(path + ": saved model config 'block' 9000: must be in [1, 8192] ('arch' llama: "
                      "the rotary table's positions)") &&
          !Contains("--block"));
  save_with("heads", 3);
  REQUIRE_THROWS_WITH(load_best(out), Contains(path + ": saved model config 'd_model' 16 must be "
                                                      "divisible by 'heads' 3"));
  save_with("window", 9);
  REQUIRE_THROWS_WITH(load_best(out),
                      Contains(path + ": saved model config 'window' 9: must be in [0, 8] (0: "
                                      "full causal attention; at most 'block')"));
}
