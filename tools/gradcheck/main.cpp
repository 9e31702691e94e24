// tools/gradcheck/main.cpp — `gradcheck`: runs tg::gradcheck (float64 central differences against
// the tape's gradients) on one op or module configuration (--op NAME and its options) or on the
// built-in table (--all), and prints one row per case: max absolute and relative error, the
// worst element (input name and index), PASS / WARN (a kink made the numerical gradient
// unreliable somewhere) / FAIL. --gradgrad checks second derivatives instead (tg::gradgradcheck:
// the first-order gradients, computed with create_graph, checked as a function of the inputs
// and of a random output gradient, named grad_output). Exit status: 0 when nothing failed, 1 on a
// failure, 2 on bad arguments. Run `gradcheck --help` for the options and `gradcheck --list` for
// the ops. Deliberately not here: the case builders (cases.cpp, attention_cases.cpp, options.cpp).
#include "autograd/openmp_wait.hpp"
#include "tools/gradcheck/cases.hpp"

#include "autograd/tensor.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace tgc {
namespace {

const char* kUsage =
    "usage: gradcheck --op NAME [case options] [check options]\n"
    "       gradcheck --all [check options]     every op family, attention masks, modules\n"
    "       gradcheck --list                    the ops, their options and the --all cases\n"
    "check options:\n"
    "  --seed N        inputs (and fast mode's projections) from this seed (default 0)\n"
    "  --fast          fast mode: random projections u^T J v instead of the full Jacobian\n"
    "  --eps H         central-difference step (default 1e-6)\n"
    "  --atol A        absolute tolerance (default 1e-5)\n"
    "  --rtol R        relative tolerance (default 1e-3)\n"
    "  --no-kinks      turn the kink detector off (entries at kinks are then compared as is)\n"
    "  --verbose       also print tg::gradcheck's per-input report of every case\n"
    "  --gradgrad      second order: tg::gradgradcheck (create_graph) instead of gradcheck\n"
    "case options: --shape 2,3 --shape2 3,4 --values 0,1,-1 --dims 0,1 --keepdim --dim d\n"
    "  --batch B --len T --src-len S --embed E --heads NH --head-size hs --ff F --vocab V\n"
    "  --causal --bottom-right --local L,R --blocked W --look-back n --blocked-causal\n"
    "  --padding l1,l2 --mem-padding l1,l2 --pad-bool --bool-mask --additive --dropout p\n"
    "  --reduction mean|sum|none --smoothing e --ignore-index i --padding-idx p --no-bias\n"
    "  --norm-first --activation relu|gelu --correction c --reduce sum|prod|mean|amax|amin\n"
    "  --exclude-self --name LABEL\n"
    "example: gradcheck --op mha --batch 2 --len 7 --embed 8 --heads 2 --local 2,0 --padding 5,7\n";

struct Cli {
  CaseArgs one;
  bool all = false, list = false, help = false, verbose = false, gradgrad = false;
  uint64_t seed = 0;
  tg::GradcheckOptions opts;
};

double positive_number(const std::string& opt, const std::string& v) {
  char* end = nullptr;
  double d = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || !(d > 0) || !std::isfinite(d))
    throw UsageError(fmt::format("{} expects a positive number, got '{}'", opt, v));
  return d;
}

Cli parse(const std::vector<std::string>& tk) {
  Cli c;
  for (size_t i = 0; i < tk.size(); ++i) {
    const std::string& o = tk[i];
    auto value = [&]() -> const std::string& {
      if (i + 1 >= tk.size()) throw UsageError(fmt::format("{} needs a value", o));
      return tk[++i];
    };
    if (o == "--all")
      c.all = true;
    else if (o == "--list")
      c.list = true;
    else if (o == "--help" || o == "-h")
      c.help = true;
    else if (o == "--verbose")
      c.verbose = true;
    else if (o == "--gradgrad")
      c.gradgrad = true;
    else if (o == "--fast")
      c.opts.mode = tg::GradcheckMode::Fast;
    else if (o == "--no-kinks")
      c.opts.detect_kinks = false;
    else if (o == "--eps")
      c.opts.eps = positive_number(o, value());
    else if (o == "--atol")
      c.opts.atol = positive_number(o, value());
    else if (o == "--rtol")
      c.opts.rtol = positive_number(o, value());
    else if (o == "--seed") {
      const std::string& v = value();
      char* end = nullptr;
      unsigned long long s = std::strtoull(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || v[0] == '-')
        throw UsageError(fmt::format("--seed expects a non-negative integer, got '{}'", v));
      c.seed = s;
    } else if (!parse_case_option(tk, i, c.one)) {
      throw UsageError(fmt::format("unknown option '{}' (see --help)", o));
    }
  }
  if (c.help || c.list) return c;
  if (c.all && !c.one.op.empty()) throw UsageError("give either --all or --op, not both");
  if (!c.all && c.one.op.empty()) throw UsageError("nothing to check: give --op NAME or --all");
  if (c.all && !c.one.given.empty())
    throw UsageError(fmt::format("--all takes no case options (got --{})", c.one.given[0]));
  c.opts.seed = c.seed;
  return c;
}

// ---- running and printing ----
struct Row {
  std::string name;
  BuiltCase built;
  tg::GradcheckReport rep;
  std::string error;  // tg::Error from building or running the case
  double seconds = 0;
  std::string result() const {
    if (!error.empty()) return "ERROR";
    if (!rep.passed) return "FAIL";
    return rep.has_kinks() ? "WARN" : "PASS";
  }
};

Row run_case(const std::string& name, const CaseArgs& a, const Cli& cli) {
  Row r;
  r.name = name;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    r.built = build_case(a, cli.seed);
    if (cli.gradgrad) {
      r.rep = tg::gradgradcheck(r.built.fn, r.built.inputs, tg::Tensor(), cli.opts);
      r.built.names.push_back("grad_output");  // gradgradcheck's last input
    } else {
      r.rep = tg::gradcheck(r.built.fn, r.built.inputs, cli.opts);
    }
  } catch (const tg::Error& e) {
    r.error = e.what();
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

// The element that is furthest outside (or closest to) the tolerance, as "name(i,j)".
std::string worst_element(const Row& r, const tg::GradcheckOptions& o) {
  const tg::GradcheckInput* w = nullptr;
  double best = -1;
  for (const auto& in : r.rep.inputs) {
    if (!in.checked || (in.worst.output_index == -1 && !r.rep.fast_mode)) continue;
    const double score = in.worst.abs_err / (o.atol + o.rtol * std::fabs(in.worst.numerical));
    if (!(score <= best)) best = score, w = &in;  // NaN scores win
  }
  if (!w) return "-";
  const std::string& name = r.built.names[w->input];
  if (r.rep.fast_mode) return name + " (projection)";
  return name + tg::shape_str(w->worst.index);
}

std::string kink_line(const Row& r, const tg::GradcheckKink& k) {
  std::string where =
      k.index.empty() && k.output_index < 0
          ? std::string("along a random direction")
          : fmt::format("index {} (output {})", tg::shape_str(k.index), k.output_index);
  return fmt::format(
      "WARN {}: kink near input {} ({}) {} \u2014 numerical gradient unreliable here (one-sided "
      "slopes {:.4g} and {:.4g}, analytical {:.4g})",
      r.name, k.input, r.built.names[k.input], where, k.left, k.right, k.analytical);
}

void print_table(const std::vector<Row>& rows, const Cli& cli) {
  size_t w = 4;
  for (const Row& r : rows) w = std::max(w, r.name.size());
  std::printf("%s\n", fmt::format("{:<{}}  {:>11}  {:>11}  {:<34} {:>8}  {}", "case", w,
                                  "max abs err", "max rel err", "worst element", "time", "result")
                          .c_str());
  for (const Row& r : rows) {
    double ma = 0, mr = 0;
    for (const auto& in : r.rep.inputs)
      if (in.checked) ma = std::max(ma, in.max_abs_err), mr = std::max(mr, in.max_rel_err);
    std::string errs = r.error.empty() ? fmt::format("{:>11.3e}  {:>11.3e}", ma, mr)
                                       : fmt::format("{:>11}  {:>11}", "-", "-");
    std::printf("%s\n", fmt::format("{:<{}}  {}  {:<34} {:>7.2f}s  {}", r.name, w, errs,
                                    r.error.empty() ? worst_element(r, cli.opts) : "-", r.seconds,
                                    r.result())
                            .c_str());
  }
  for (const Row& r : rows) {
    if (!r.error.empty()) std::printf("ERROR %s: %s\n", r.name.c_str(), r.error.c_str());
    if (!r.error.empty()) continue;
    int64_t total = 0;
    for (const auto& in : r.rep.inputs) total += in.kinks;
    for (const auto& k : r.rep.kinks) std::printf("%s\n", kink_line(r, k).c_str());
    if (total > static_cast<int64_t>(r.rep.kinks.size()))
      std::printf("WARN %s: ... and %lld more kink entries\n", r.name.c_str(),
                  static_cast<long long>(total - r.rep.kinks.size()));
    if (!r.rep.passed || cli.verbose) {
      std::printf("\n%s: inputs", r.name.c_str());
      for (size_t i = 0; i < r.built.names.size(); ++i)
        std::printf(" %zu=%s", i, r.built.names[i].c_str());
      std::printf("\n%s", r.rep.str().c_str());
    }
  }
}

void print_list() {
  std::printf("ops (--op NAME):\n");
  for (const OpInfo& op : op_registry())
    std::printf("  %-20s %s\n", op.name.c_str(), op.help.c_str());
  std::printf("\n--all runs these cases:\n");
  for (const TableCase& t : all_cases())
    std::printf("  %-42s %s\n", t.name.c_str(), t.args.c_str());
  std::string ops;
  for (const std::string& op : all_covered_ops()) ops += " " + op;
  std::printf("\n--all differentiates these public ops:%s\n", ops.c_str());
}

int run(const std::vector<std::string>& tk) {
  const Cli cli = parse(tk);
  if (cli.help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (cli.list) {
    print_list();
    return 0;
  }
  std::vector<Row> rows;
  const auto t0 = std::chrono::steady_clock::now();
  if (cli.all) {
    for (const TableCase& t : all_cases())
      rows.push_back(run_case(t.name, parse_case(t.args), cli));
  } else {
    Row r = run_case(case_label(cli.one), cli.one, cli);
    if (!r.error.empty()) throw UsageError(r.error);  // bad sizes for the op: the user's mistake
    rows.push_back(std::move(r));
  }
  print_table(rows, cli);
  int passed = 0, warned = 0, failed = 0;
  for (const Row& r : rows) {
    const std::string res = r.result();
    (res == "PASS" ? passed : res == "WARN" ? warned : failed)++;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "\n%zu case%s: %d passed, %d warned (kinks), %d failed (%.2f s, %s%s mode, seed %llu)\n",
      rows.size(), rows.size() == 1 ? "" : "s", passed, warned, failed, secs,
      cli.gradgrad ? "second-order, " : "",
      cli.opts.mode == tg::GradcheckMode::Fast ? "fast" : "auto",
      static_cast<unsigned long long>(cli.seed));
  return failed ? 1 : 0;
}

}  // namespace
}  // namespace tgc

int main(int argc, char** argv) {
  tg::passive_openmp_wait(argv);  // idle OpenMP threads sleep (openmp_wait.hpp says why)
  try {
    return tgc::run(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const tgc::UsageError& e) {
    std::fprintf(stderr, "gradcheck: error: %s\n%s", e.what(),
                 "run 'gradcheck --help' for the options, 'gradcheck --list' for the ops\n");
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gradcheck: internal error: %s\n", e.what());
    return 3;
  }
}
