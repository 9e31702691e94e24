// tests/examples/common/test_common.cpp — the example toolkit: argument parser, UTF-8 helpers,
// PNG round trip, heatmap and plot sizes, confusion matrix and chrF against hand-computed values.
#include "common/cli.hpp"
#include "common/metrics.hpp"
#include "common/png.hpp"
#include "common/progress.hpp"
#include "common/text.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>

using Catch::Matchers::Contains;

namespace {
std::string tmp_path(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / "tg_test_common";
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}
}  // namespace

TEST_CASE("ArgParser: options, flags, defaults and errors", "[examples][common]") {
  tgx::ArgParser p("prog", "does things");
  p.option("epochs", "3", "epochs").option("lr", "0.001", "rate").option("name", "", "a name");
  p.flag("quiet", "no output");
  const char* argv[] = {"prog", "--epochs", "5", "--lr=0.5", "--quiet"};
  REQUIRE(p.parse(5, argv));
  CHECK(p.integer("epochs") == 5);
  CHECK(p.number("lr") == 0.5);
  CHECK(p.flag("quiet"));
  CHECK(p.str("name").empty());
  CHECK_FALSE(p.given("name"));
  CHECK_THAT(p.usage(), Contains("--epochs VALUE") && Contains("(default 3)"));

  const char* bad1[] = {"prog", "--epoch", "5"};
  CHECK_THAT(error_of([&] { p.parse(3, bad1); }), Contains("unknown option --epoch"));
  const char* bad2[] = {"prog", "--epochs"};
  CHECK_THAT(error_of([&] { p.parse(2, bad2); }), Contains("--epochs needs a value"));
  const char* bad3[] = {"prog", "--epochs", "5x"};
  p.parse(3, bad3);
  CHECK_THAT(error_of([&] { p.integer("epochs"); }),
             Contains("--epochs must be a whole number, got '5x'"));
  const char* bad4[] = {"prog", "stray"};
  CHECK_THAT(error_of([&] { p.parse(2, bad4); }), Contains("unexpected argument 'stray'"));
  CHECK(tgx::run_main("prog", []() -> int { throw tgx::UserError("bad"); }) == 2);
  CHECK(tgx::run_main("prog", []() -> int { throw std::runtime_error("worse"); }) == 1);
  CHECK(tgx::run_main("prog", [] { return 0; }) == 0);
  CHECK(tgx::split_list("5,7", ',', "--padding") == std::vector<std::string>{"5", "7"});
  CHECK_THAT(error_of([] { tgx::split_list("5,,7", ',', "--padding"); }),
             Contains("--padding: empty item"));
}

TEST_CASE("UTF-8: validation, Latin-1 fallback, code points", "[examples][common]") {
  size_t at = 99;
  CHECK(tgx::is_valid_utf8("caf\xC3\xA9 \xE2\x82\xAC"));
  CHECK_FALSE(tgx::is_valid_utf8("ab\xE9z", &at));
  CHECK(at == 2);
  CHECK_FALSE(tgx::is_valid_utf8("\xC0\xAF"));          // overlong '/'
  CHECK_FALSE(tgx::is_valid_utf8("\xED\xA0\x80"));      // surrogate
  CHECK_FALSE(tgx::is_valid_utf8("\xF4\x90\x80\x80"));  // above U+10FFFF
  CHECK_FALSE(tgx::is_valid_utf8("\xE2\x82"));          // truncated
  CHECK(tgx::latin1_fallback_to_utf8("caf\xE9 \xC3\xA9") == "caf\xC3\xA9 \xC3\xA9");
  CHECK(tgx::utf8_chars("a\xC3\xA9\xE2\x82\xAC") ==
        std::vector<std::string>{"a", "\xC3\xA9", "\xE2\x82\xAC"});
  CHECK_THAT(error_of([] { tgx::require_utf8("ok\xFF", "input.txt"); }),
             Contains("input.txt: not valid UTF-8 at byte 2 (byte 0xFF)"));
  CHECK_THAT(
      error_of([] { tgx::read_file("/nonexistent/x.txt", "install it with: apt-get install x"); }),
      Contains("/nonexistent/x.txt: cannot open (missing); install it with: apt-get install x"));
  CHECK(tgx::squeeze_spaces("  a \n\t b  ") == "a b");
  CHECK(tgx::trim("  a b \n") == "a b");
}

TEST_CASE("PNG: write, read back, pixels identical", "[examples][common]") {
  tgx::Image img(7, 5, {10, 20, 30});
  img.set(3, 2, {255, 0, 128});
  img.set(100, 100, {1, 2, 3});  // outside: ignored
  std::string path = tmp_path("roundtrip.png");
  tgx::write_png(path, img);
  tgx::Image back = tgx::read_png(path);
  REQUIRE(back.width == 7);
  REQUIRE(back.height == 5);
  CHECK(back.rgb == img.rgb);
  CHECK(back.get(3, 2).g == 0);
  CHECK_THAT(error_of([] { tgx::read_png("/nonexistent.png"); }), Contains("cannot open"));
  CHECK_THAT(error_of([] { tgx::Image(0, 5); }), Contains("size 0x5"));
}

TEST_CASE("heatmap: cells take the colormap's ends, labels fit, bad sizes are errors",
          "[examples][common]") {
  tgx::HeatmapOptions o;
  o.row_labels = {"the", "cat"};
  o.col_labels = {"le", "chat", "noir"};
  o.cell = 20;
  tgx::Image img = tgx::heatmap({0, 0.5, 1, 1, 0.25, 0}, 2, 3, o);
  CHECK(img.width > 3 * 20);
  CHECK(img.height >= 2 * 20);
  // find the (0,0) cell: the bottom-right pixel of the grid is the last cell (value 0 -> lowest
  // colour)
  tgx::RGB lo = tgx::colormap(0), hi = tgx::colormap(1);
  bool saw_lo = false, saw_hi = false;
  for (int y = 0; y < img.height; ++y)
    for (int x = 0; x < img.width; ++x) {
      tgx::RGB c = img.get(x, y);
      saw_lo |= c.r == lo.r && c.g == lo.g && c.b == lo.b;
      saw_hi |= c.r == hi.r && c.g == hi.g && c.b == hi.b;
    }
  CHECK(saw_lo);
  CHECK(saw_hi);
  CHECK_THAT(error_of([&] {
               tgx::heatmap({1, 2, 3}, 2, 2, o);
             }),
             Contains("3 values for 2x2 cells"));
  o.row_labels = {"one"};
  CHECK_THAT(error_of([&] {
               tgx::heatmap({0, 0.5, 1, 1, 0.25, 0}, 2, 3, o);
             }),
             Contains("1 row labels for 2 rows"));
  tgx::PlotOptions po;
  po.title = "t";
  po.xlabel = "step";
  po.ylabel = "loss";
  po.width = 320;
  po.height = 200;
  tgx::Image plot = tgx::line_plot({{"loss", {0, 1, 2}, {3, 2, NAN}, {200, 0, 0}}}, po);
  CHECK(plot.width == 320);
  CHECK(plot.height == 200);
  // The legend sits above the plot area: no series colour below its row except the data's.
  tgx::Image two = tgx::stack_vertical({plot, plot});
  CHECK(two.height == 400);
  CHECK(two.width == 320);
}

TEST_CASE("ConfusionMatrix: accuracy, precision, recall, F1", "[examples][common]") {
  tgx::ConfusionMatrix m({"ham", "spam"});
  // truth ham: 8 right, 2 wrong; truth spam: 1 wrong, 9 right
  for (int i = 0; i < 8; ++i) m.add(0, 0);
  for (int i = 0; i < 2; ++i) m.add(0, 1);
  m.add(1, 0);
  for (int i = 0; i < 9; ++i) m.add(1, 1);
  CHECK(m.accuracy() == Approx(17.0 / 20));
  auto pc = m.per_class();
  CHECK(pc[0].precision == Approx(8.0 / 9));
  CHECK(pc[0].recall == Approx(0.8));
  CHECK(pc[1].precision == Approx(9.0 / 11));
  CHECK(pc[1].recall == Approx(0.9));
  CHECK(pc[1].f1 == Approx(2 * (9.0 / 11) * 0.9 / (9.0 / 11 + 0.9)));
  CHECK(pc[1].support == 10);
  CHECK_THAT(m.str(), Contains("accuracy 0.8500"));
  CHECK_THAT(error_of([&] { m.add(2, 0); }), Contains("out of range for 2 classes"));
}

TEST_CASE("chrF: hand-computed values (sacrebleu's definition)", "[examples][common]") {
  CHECK(tgx::chrf({"ab"}, {"ab"}) == Approx(100.0));
  // 1-grams P = R = 1/2, 2-grams P = R = 0 -> averages 1/4 -> F2 = 0.25
  CHECK(tgx::chrf({"ab"}, {"ac"}) == Approx(25.0));
  // 1: P 2/3 R 1; 2: P 1/2 R 1; 3: hyp only (P 0) -> effective order 2
  // P = (2/3 + 1/2) / 2, R = 1, F2 = 5PR / (4P + R) = 0.875
  CHECK(tgx::chrf({"abc"}, {"ab"}) == Approx(87.5));
  CHECK(tgx::chrf({"a b"}, {"ab"}) == Approx(100.0));  // spaces are ignored
  CHECK(tgx::chrf({"x"}, {"y"}) == Approx(0.0));
  CHECK_THAT(error_of([] { tgx::chrf({"a"}, {}); }), Contains("1 hypotheses for 0 references"));
  CHECK(tgx::format_duration(83) == "1m23s");
  CHECK(tgx::format_duration(45.24) == "45.2s");
}

TEST_CASE("common: --device parses cpu / cuda / cuda:N and refuses what is not there") {
  CHECK(tgx::device_option("cpu") == tg::kCPU);
  CHECK_THROWS_WITH(tgx::device_option("gpu"), Catch::Contains("expected cpu, cuda or cuda:N"));
  CHECK_THROWS_WITH(tgx::device_option("cuda:x"), Catch::Contains("--device cuda:x"));
  if (tg::cuda_device_count() == 0) {
    CHECK_THROWS_AS(tgx::device_option("cuda"), tgx::UserError);
    CHECK_THROWS_WITH(tgx::device_option("cuda"), Catch::Contains("no CUDA device"));
  } else {
    CHECK(tgx::device_option("cuda") == tg::cuda_device(0));
    CHECK_THROWS_WITH(tgx::device_option("cuda:" + std::to_string(tg::cuda_device_count())),
                      Catch::Contains("visible"));
  }
}
