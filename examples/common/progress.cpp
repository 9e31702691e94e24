// examples/common/progress.cpp — the progress bar and its plain-lines fallback (progress.hpp).
#include "common/progress.hpp"

#include <cmath>
#include <unistd.h>

namespace tgx {

std::string format_duration(double s) {
  char buf[32];
  if (!std::isfinite(s) || s < 0) return "?";
  if (s < 60)
    std::snprintf(buf, sizeof buf, "%.1fs", s);
  else if (s < 3600)
    std::snprintf(buf, sizeof buf, "%dm%02ds", int(s) / 60, int(s) % 60);
  else
    std::snprintf(buf, sizeof buf, "%dh%02dm", int(s) / 3600, (int(s) % 3600) / 60);
  return buf;
}

Progress::Progress(Mode mode, std::FILE* out, double line_every_s)
    : mode_(mode), out_(out), line_every_s_(line_every_s) {
  if (mode_ == Mode::kAuto) mode_ = isatty(fileno(out_)) ? Mode::kBar : Mode::kLines;
}

void Progress::start_epoch(int epoch, int epochs, int64_t steps_in_epoch) {
  epoch_ = epoch;
  epochs_ = epochs;
  steps_ = steps_in_epoch;
  step_ = examples_ = 0;
  loss_sum_ = last_loss_ = 0;
  epoch_start_ = last_draw_ = Clock::now();
}

void Progress::step(double loss, int64_t examples) {
  ++step_;
  examples_ += examples;
  loss_sum_ += loss;
  last_loss_ = loss;
  auto now = Clock::now();
  double since = std::chrono::duration<double>(now - last_draw_).count();
  if (mode_ == Mode::kBar && (since >= 0.1 || step_ == steps_)) draw(false);
  if (mode_ == Mode::kLines && since >= line_every_s_) draw(false);
}

double Progress::epoch_mean_loss() const { return step_ > 0 ? loss_sum_ / double(step_) : 0.0; }

void Progress::draw(bool final) {
  last_draw_ = Clock::now();
  double elapsed = std::chrono::duration<double>(last_draw_ - epoch_start_).count();
  double rate = elapsed > 0 ? double(examples_) / elapsed : 0.0;
  double eta = step_ > 0 ? elapsed / double(step_) * double(steps_ - step_) : NAN;
  char stats[160];
  std::snprintf(stats, sizeof stats, "%lld/%lld loss %.4f (mean %.4f) %.0f ex/s %s %s",
                (long long)step_, (long long)steps_, last_loss_, epoch_mean_loss(), rate,
                final ? "took" : "ETA", format_duration(final ? elapsed : eta).c_str());
  if (mode_ == Mode::kBar) {
    const int width = 24;
    int filled = steps_ > 0 ? int(width * step_ / steps_) : 0;
    std::string bar(filled, '#');
    bar += std::string(width - filled, '.');
    std::fprintf(out_, "\r\033[2Kepoch %d/%d [%s] %s", epoch_, epochs_, bar.c_str(), stats);
    bar_open_ = true;
  } else if (mode_ == Mode::kLines) {
    std::fprintf(out_, "epoch %d/%d step %s\n", epoch_, epochs_, stats);
  }
  std::fflush(out_);
}

void Progress::end_epoch(const std::string& summary) {
  if (mode_ == Mode::kQuiet) return;
  if (mode_ == Mode::kBar) {
    draw(true);
    std::fprintf(out_, "\n");
    bar_open_ = false;
  }
  if (!summary.empty()) std::fprintf(out_, "%s\n", summary.c_str());
  std::fflush(out_);
}

void Progress::line(const std::string& text) {
  if (mode_ == Mode::kQuiet) return;
  if (bar_open_) std::fprintf(out_, "\r\033[2K");
  std::fprintf(out_, "%s\n", text.c_str());
  if (bar_open_) draw(false);
  std::fflush(out_);
}

}  // namespace tgx
