// tests/examples/attention_lab/test_model_lab.cpp — attention_lab --model on tiny seeded GPT-2 and
// Llama folders (finetune --make-seeded): the maps of the chosen layer and head are written (NPY
// for every head, PNG for the chosen ones), P is the row softmax of S over the causal keys, dS
// rows sum to zero (dS = P ⊙ (dP − rowsum(dP ⊙ P))), and bad choices are refused.
#include <catch2/catch.hpp>

#include "attention_lab/lab.hpp"
#include "autograd/io.hpp"
#include "common/cli.hpp"
#include "finetune/app.hpp"

#include <cmath>
#include <filesystem>

using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

const std::string kRoot = std::string(TG_BINARY_DIR) + "/test-model-lab";

std::string seeded(const std::string& family) {
  const std::string dir = kRoot + "/seeded-" + family;
  if (!fs::exists(dir + "/config.json"))
    REQUIRE(tgx::finetune::run({"--make-seeded", dir, "--family", family, "--d-model", "32",
                                "--layers", "2", "--heads", "4", "--kv-heads", "2"}) == 0);
  return dir;
}

}  // namespace

TEST_CASE("attention_lab --model: S, P, dP, dS of a loaded GPT-2 and Llama layer",
          "[attention_lab][model]") {
  for (const std::string family : {"gpt2", "llama"}) {
    const std::string out = kRoot + "/maps-" + family;
    fs::remove_all(out);
    REQUIRE(tgx::lab::run({"--model", seeded(family), "--text", "The tape records every operation.",
                           "--layer", "1", "--head", "2", "--out", out, "--threads", "1"}) == 0);
    for (const char* m : {"S", "P", "dP", "dS"}) {
      REQUIRE(fs::is_regular_file(out + "/" + m + ".npy"));
      REQUIRE(fs::is_regular_file(out + "/" + m + "_l1_h2.png"));
      REQUIRE_FALSE(fs::exists(out + "/" + m + "_l1_h0.png"));
    }
    const tg::Tensor S = tg::load_npy(out + "/S.npy"), P = tg::load_npy(out + "/P.npy"),
                     dS = tg::load_npy(out + "/dS.npy");
    REQUIRE(P.dim() == 4);
    const int64_t NH = P.size(1), T = P.size(2);
    REQUIRE(NH == 4);
    REQUIRE(T >= 5);
    const auto s = S.to_vector<double>(), p = P.to_vector<double>(), ds = dS.to_vector<double>();
    double dsn = 0;
    for (int64_t h = 0; h < NH; ++h)
      for (int64_t i = 0; i < T; ++i) {
        double z = 0, rowp = 0, rowds = 0, mx = -INFINITY;
        const size_t row = static_cast<size_t>((h * T + i) * T);
        for (int64_t j = 0; j <= i; ++j) mx = std::max(mx, s[row + j]);
        for (int64_t j = 0; j <= i; ++j) z += std::exp(s[row + j] - mx);
        for (int64_t j = 0; j < T; ++j) {
          INFO(family << " head " << h << " query " << i << " key " << j);
          if (j > i) {  // causal: a later key is blocked
            REQUIRE(std::isinf(s[row + j]));
            REQUIRE(p[row + j] == 0);
            REQUIRE(ds[row + j] == 0);
          } else {
            REQUIRE(p[row + j] == Approx(std::exp(s[row + j] - mx) / z).margin(1e-6));
          }
          rowp += p[row + j];
          rowds += ds[row + j];
          dsn += std::fabs(ds[row + j]);
        }
        REQUIRE(rowp == Approx(1).margin(1e-5));
        REQUIRE(std::fabs(rowds) < 1e-7);
      }
    REQUIRE(dsn > 0);  // the loss's gradient reached the layer
  }
  REQUIRE_THROWS_WITH(tgx::lab::run({"--model", seeded("gpt2"), "--layer", "2", "--out", kRoot}),
                      Contains("--layer 2"));
  REQUIRE_THROWS_WITH(tgx::lab::run({"--model", seeded("gpt2"), "--text", "a", "--out", kRoot}),
                      Contains("--text: 1 tokens"));
}
