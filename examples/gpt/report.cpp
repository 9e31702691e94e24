// examples/gpt/report.cpp — the loss curve and the samples file (see report.hpp).
#include "gpt/report.hpp"

#include "autograd/io.hpp"
#include "common/png.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace tgx::gpt {

void write_loss_curve(const std::string& path, const History& h, double baseline,
                      double final_heldout, double final_baseline) {
  Series raw{"train loss (per step)", {}, {}, {200, 200, 220}};
  Series smooth{"train loss (EMA 0.95)", {}, {}, {31, 119, 180}};
  double ema = 0;
  for (size_t i = 0; i < h.loss.size(); ++i) {
    ema = i == 0 ? h.loss[0] : 0.95 * ema + 0.05 * h.loss[i];
    raw.x.push_back(static_cast<double>(i + 1));
    raw.y.push_back(h.loss[i]);
    smooth.x.push_back(static_cast<double>(i + 1));
    smooth.y.push_back(ema);
  }
  Series tr{"train windows (eval)", {}, {}, {44, 160, 44}};
  Series he{"held-out windows (eval)", {}, {}, {214, 39, 40}};
  for (size_t i = 0; i < h.eval_step.size(); ++i) {
    tr.x.push_back(static_cast<double>(h.eval_step[i]));
    tr.y.push_back(h.eval_train[i]);
    he.x.push_back(static_cast<double>(h.eval_step[i]));
    he.y.push_back(h.eval_heldout[i]);
  }
  const double last = static_cast<double>(std::max<size_t>(1, h.loss.size()));
  std::vector<Series> all = {raw, smooth, tr, he};
  if (std::isfinite(baseline))
    all.push_back(Series{
        "n-gram baseline (held-out windows)", {0, last}, {baseline, baseline}, {148, 103, 189}});
  PlotOptions o;
  o.title = std::isfinite(final_heldout)
                ? fmt::format("gpt: held-out {:.4f} nats/char, n-gram {:.4f}", final_heldout,
                              final_baseline)
                : std::string("gpt on fortunes: cross-entropy (nats per character)");
  // The axis spans what matters, the evaluations and the baseline with a margin; the first
  // steps' losses (near log V, far above) are drawn on the top edge.
  if (!h.eval_heldout.empty()) {
    double lo = std::isfinite(baseline) ? baseline : INFINITY;
    double hi = std::isfinite(baseline) ? baseline : -INFINITY;
    for (size_t i = 0; i < h.eval_heldout.size(); ++i) {
      lo = std::min({lo, h.eval_heldout[i], h.eval_train[i]});
      hi = std::max({hi, h.eval_heldout[i], h.eval_train[i]});
    }
    if (std::isfinite(lo) && std::isfinite(hi) && hi > lo) {
      o.y_min = lo - 0.1 * (hi - lo);
      o.y_max = hi + 0.1 * (hi - lo);
    }
  }
  o.xlabel = "optimizer step";
  o.ylabel = "nats per character";
  o.y_from_zero = false;
  o.x_min = 0;
  o.x_max = last;
  write_png(path, line_plot(all, o));
}

void write_samples(const std::string& path, const std::vector<std::string>& samples,
                   const std::string& header) {
  std::string text;
  for (size_t i = 0; i < samples.size(); ++i)
    text += fmt::format("--- sample {} ({}) ---\n{}\n", i + 1, header, samples[i]);
  tg::write_file_atomic(path, text);
}

}  // namespace tgx::gpt
