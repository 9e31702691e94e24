// examples/common/progress.hpp — training progress for people: a one-line bar redrawn in place
// on a terminal (epoch, step/steps, loss, examples/s, ETA), and plain periodic lines when stdout
// is not a terminal (logs, CI). kQuiet (--quiet) silences all of it, line() included; final
// results are printed by the example itself.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace tgx {

class Progress {
 public:
  enum class Mode { kAuto, kBar, kLines, kQuiet };
  // kAuto picks kBar when `out` is a terminal, kLines otherwise. Lines are printed every
  // line_every_s seconds (and at the end of each epoch).
  explicit Progress(Mode mode = Mode::kAuto, std::FILE* out = stdout, double line_every_s = 10.0);

  void start_epoch(int epoch, int epochs, int64_t steps_in_epoch);
  // Called after each step; loss is that step's loss, examples the batch size.
  void step(double loss, int64_t examples);
  // Ends the epoch's bar; prints `summary` on its own line (unless quiet).
  void end_epoch(const std::string& summary);
  // A line of text that does not break the bar (always printed unless quiet).
  void line(const std::string& text);

  double epoch_mean_loss() const;
  Mode mode() const { return mode_; }

 private:
  void draw(bool final);
  using Clock = std::chrono::steady_clock;
  Mode mode_;
  std::FILE* out_;
  double line_every_s_;
  int epoch_ = 0, epochs_ = 0;
  int64_t steps_ = 0, step_ = 0, examples_ = 0;
  double loss_sum_ = 0, last_loss_ = 0;
  Clock::time_point epoch_start_, last_draw_;
  bool bar_open_ = false;
};

// "1m23s", "45.2s", "2h03m".
std::string format_duration(double seconds);

}  // namespace tgx
