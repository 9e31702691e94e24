// examples/common/png.cpp — Image, PNG files through libpng (written atomically), the
// colormap, attention heatmaps and line plots (png.hpp). Drawing is plain pixel loops.
#include "common/png.hpp"

#include "autograd/io.hpp"
#include "autograd/tensor.hpp"

#include <png.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <tuple>
#include <utility>

namespace tgx {

Image::Image(int w, int h, RGB fill) : width(w), height(h), rgb(size_t(w) * h * 3) {
  if (w <= 0 || h <= 0 || w > 20000 || h > 20000)
    throw tg::Error("Image: size " + std::to_string(w) + "x" + std::to_string(h) +
                    " must be between 1 and 20000 pixels each way");
  fill_rect(0, 0, w, h, fill);
}

void Image::set(int x, int y, RGB c) {
  if (x < 0 || y < 0 || x >= width || y >= height) return;
  uint8_t* p = &rgb[(size_t(y) * width + x) * 3];
  p[0] = c.r, p[1] = c.g, p[2] = c.b;
}

RGB Image::get(int x, int y) const {
  if (x < 0 || y < 0 || x >= width || y >= height)
    throw tg::Error("Image::get: pixel (" + std::to_string(x) + "," + std::to_string(y) +
                    ") outside " + std::to_string(width) + "x" + std::to_string(height));
  const uint8_t* p = &rgb[(size_t(y) * width + x) * 3];
  return {p[0], p[1], p[2]};
}

void Image::fill_rect(int x, int y, int w, int h, RGB c) {
  for (int yy = std::max(0, y); yy < std::min(height, y + h); ++yy)
    for (int xx = std::max(0, x); xx < std::min(width, x + w); ++xx) set(xx, yy, c);
}

// ---- PNG files ----------------------------------------------------------------------------------
namespace {
void png_append(png_structp png, png_bytep data, png_size_t n) {
  static_cast<std::string*>(png_get_io_ptr(png))->append(reinterpret_cast<char*>(data), n);
}
void png_flush(png_structp) {}
[[noreturn]] void png_fail(png_structp png, png_const_charp msg) {
  throw tg::Error(std::string(static_cast<const char*>(png_get_error_ptr(png))) + ": " + msg);
}
void png_warn(png_structp, png_const_charp) {}
}  // namespace

void write_png(const std::string& path, const Image& img) {
  if (img.width <= 0 || img.height <= 0 || img.rgb.size() != size_t(img.width) * img.height * 3)
    throw tg::Error("write_png: " + path + ": image " + std::to_string(img.width) + "x" +
                    std::to_string(img.height) + " has no pixels or the wrong buffer size");
  std::string what = "write_png: " + path, bytes;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, const_cast<char*>(what.c_str()),
                                            png_fail, png_warn);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!info) {
    png_destroy_write_struct(&png, nullptr);
    throw tg::Error(what + ": out of memory");
  }
  try {
    png_set_write_fn(png, &bytes, png_append, png_flush);
    png_set_IHDR(png, info, img.width, img.height, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (int y = 0; y < img.height; ++y)
      png_write_row(png, const_cast<png_bytep>(&img.rgb[size_t(y) * img.width * 3]));
    png_write_end(png, nullptr);
  } catch (...) {
    png_destroy_write_struct(&png, &info);
    throw;
  }
  png_destroy_write_struct(&png, &info);
  tg::write_file_atomic(path, bytes);
}

Image read_png(const std::string& path) {
  std::string what = "read_png: " + path;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), std::fclose);
  if (!f) throw tg::Error(what + ": cannot open");
  unsigned char sig[8];
  if (std::fread(sig, 1, 8, f.get()) != 8 || png_sig_cmp(sig, 0, 8))
    throw tg::Error(what + ": not a PNG file");
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, const_cast<char*>(what.c_str()),
                                           png_fail, png_warn);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!info) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    throw tg::Error(what + ": out of memory");
  }
  Image img;
  try {
    png_init_io(png, f.get());
    png_set_sig_bytes(png, 8);
    png_read_info(png, info);
    png_set_expand(png);
    png_set_strip_16(png);
    png_set_strip_alpha(png);
    png_set_gray_to_rgb(png);
    png_read_update_info(png, info);
    int w = int(png_get_image_width(png, info)), h = int(png_get_image_height(png, info));
    img = Image(w, h);
    std::vector<png_bytep> rows(h);
    for (int y = 0; y < h; ++y) rows[y] = &img.rgb[size_t(y) * w * 3];
    png_read_image(png, rows.data());
    png_read_end(png, nullptr);
  } catch (...) {
    png_destroy_read_struct(&png, &info, nullptr);
    throw;
  }
  png_destroy_read_struct(&png, &info, nullptr);
  return img;
}

// ---- colours ------------------------------------------------------------------------------------
RGB colormap(double t) {
  if (!std::isfinite(t)) return {160, 160, 160};
  // viridis sampled at 9 points, linearly interpolated
  static const double kStops[9][3] = {{68, 1, 84},    {71, 44, 122},  {59, 81, 139},
                                      {44, 113, 142}, {33, 144, 141}, {39, 173, 129},
                                      {92, 200, 99},  {170, 220, 50}, {253, 231, 37}};
  t = std::clamp(t, 0.0, 1.0) * 8.0;
  int i = std::min(7, int(t));
  double f = t - i;
  auto mix = [&](int c) {
    return uint8_t(std::lround(kStops[i][c] * (1 - f) + kStops[i + 1][c] * f));
  };
  return {mix(0), mix(1), mix(2)};
}

namespace {
RGB diverging(double t) {  // t in [-1, 1]: blue - white - red
  if (!std::isfinite(t)) return {160, 160, 160};
  t = std::clamp(t, -1.0, 1.0);
  auto lerp = [](double a, double b, double f) { return uint8_t(std::lround(a + (b - a) * f)); };
  if (t < 0) return {lerp(255, 33, -t), lerp(255, 102, -t), lerp(255, 172, -t)};
  return {lerp(255, 178, t), lerp(255, 24, t), lerp(255, 43, t)};
}

std::string fit_label(const std::string& s, int max_px) {
  int max_chars = std::max(1, max_px / kGlyphW);
  if (text_width(s) <= max_px) return s;
  std::string cut;
  int n = 0;
  for (size_t i = 0; i < s.size() && n < max_chars - 1; ++i) {  // whole UTF-8 sequences only
    cut.push_back(s[i]);
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 &&
        (i + 1 >= s.size() || (static_cast<unsigned char>(s[i + 1]) & 0xC0) != 0x80))
      ++n;
  }
  while (!cut.empty() && (static_cast<unsigned char>(cut.back()) & 0xC0) == 0xC0) cut.pop_back();
  return cut + "~";
}

std::string fmt_num(double v) {
  char buf[32];
  if (v != 0 && (std::fabs(v) < 1e-3 || std::fabs(v) >= 1e5))
    std::snprintf(buf, sizeof buf, "%.2e", v);
  else
    std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}
}  // namespace

// ---- heatmap ------------------------------------------------------------------------------------
namespace {
void check_heatmap(const std::vector<double>& values, int rows, int cols,
                   const HeatmapOptions& opt) {
  if (rows <= 0 || cols <= 0 || values.size() != size_t(rows) * cols)
    throw tg::Error("heatmap: " + std::to_string(values.size()) + " values for " +
                    std::to_string(rows) + "x" + std::to_string(cols) + " cells");
  if (!opt.row_labels.empty() && int(opt.row_labels.size()) != rows)
    throw tg::Error("heatmap: " + std::to_string(opt.row_labels.size()) + " row labels for " +
                    std::to_string(rows) + " rows");
  if (!opt.col_labels.empty() && int(opt.col_labels.size()) != cols)
    throw tg::Error("heatmap: " + std::to_string(opt.col_labels.size()) + " column labels for " +
                    std::to_string(cols) + " columns");
}

// The colour scale's range: the options' when vmin < vmax, else the finite values' (centred on
// 0 when symmetric), never empty.
std::pair<double, double> color_range(const std::vector<double>& values,
                                      const HeatmapOptions& opt) {
  double lo = opt.vmin, hi = opt.vmax;
  if (!(lo < hi)) {
    lo = INFINITY, hi = -INFINITY;
    for (double v : values)
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
    if (!(lo <= hi)) lo = 0, hi = 1;
    if (opt.symmetric) hi = std::max(std::fabs(lo), std::fabs(hi)), lo = -hi;
    if (hi == lo) hi = lo + 1;
  }
  return {lo, hi};
}
}  // namespace

Image heatmap(const std::vector<double>& values, int rows, int cols, const HeatmapOptions& opt) {
  check_heatmap(values, rows, cols, opt);
  int cell = opt.cell > 0 ? opt.cell : std::clamp(900 / std::max(rows, cols), 2, 24);
  bool labels = cell >= kGlyphH;
  auto widest = [&](const std::vector<std::string>& ls) {
    int w = 0;
    for (const auto& l : ls) w = std::max(w, text_width(l));
    return std::min(w, 16 * kGlyphW);
  };
  int left = labels && !opt.row_labels.empty() ? widest(opt.row_labels) + 6 : 4;
  int top = (opt.title.empty() ? 4 : 14) +
            (labels && !opt.col_labels.empty() ? widest(opt.col_labels) + 6 : 0);
  int bar_w = 60, w = left + cols * cell + 10 + bar_w, h = top + rows * cell + 6;
  h = std::max(h, top + 60);
  w = std::max(w, text_width(opt.title) + 8);
  Image img(w, h);
  double lo, hi;
  std::tie(lo, hi) = color_range(values, opt);
  auto color = [&](double v) {
    return opt.symmetric ? diverging(v / std::max(std::fabs(lo), std::fabs(hi)))
                         : colormap((v - lo) / (hi - lo));
  };
  const RGB black{0, 0, 0};
  if (!opt.title.empty()) draw_text(img, 4, 3, opt.title, black);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c)
      img.fill_rect(left + c * cell, top + r * cell, cell, cell,
                    color(values[size_t(r) * cols + c]));
  if (labels) {
    for (int r = 0; r < int(opt.row_labels.size()); ++r) {
      std::string l = fit_label(opt.row_labels[r], left - 6);
      draw_text(img, left - 3 - text_width(l), top + r * cell + (cell - 7) / 2, l, black);
    }
    for (int c = 0; c < int(opt.col_labels.size()); ++c) {
      std::string l = fit_label(opt.col_labels[c], 16 * kGlyphW);
      draw_text(img, left + c * cell + (cell - 7) / 2, top - 4, l, black, 1, true);
    }
  }
  // colour bar with its range
  int bx = left + cols * cell + 10, bh = std::max(40, rows * cell);
  for (int y = 0; y < bh; ++y) {
    double v = hi - (hi - lo) * y / std::max(1, bh - 1);
    img.fill_rect(bx, top + y, 10, 1, color(v));
  }
  draw_text(img, bx + 12, top, fmt_num(hi), black);
  draw_text(img, bx + 12, top + bh - 8, fmt_num(lo), black);
  return img;
}

// ---- line plot ----------------------------------------------------------------------------------
namespace {
// A 1-2-5 step near range / target.
double nice_step(double range, int target) {
  const double raw = range / std::max(1, target);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * mag * 1.0000001) return m * mag;
  return 10 * mag;
}
// A tick label with as many decimals as the step needs (0.5 -> "0.5", 200 -> "200").
std::string tick_label(double v, double step) {
  if (std::fabs(v) < step * 1e-9) v = 0;
  const int decimals = std::max(0, static_cast<int>(-std::floor(std::log10(step) + 1e-9)));
  char buf[32];
  if (std::fabs(v) >= 1e6 && decimals == 0)
    std::snprintf(buf, sizeof buf, "%.3g", v);
  else
    std::snprintf(buf, sizeof buf, "%.*f", std::min(decimals, 6), v);
  return buf;
}
struct Axis {
  double lo = 0, hi = 1;
  std::vector<double> ticks;  // in axis units (log10 of the value on a log axis)
  std::vector<std::string> labels;
};
// Linear axis over [lo, hi] widened to whole ticks; integer: ticks on whole numbers.
Axis linear_axis(double lo, double hi, int target, bool integer) {
  Axis ax;
  if (!(hi > lo)) hi = lo + 1;
  double step = nice_step(hi - lo, target);
  if (integer) step = std::max(1.0, std::round(step));
  ax.lo = std::floor(lo / step + 1e-9) * step;
  ax.hi = std::ceil(hi / step - 1e-9) * step;
  for (double t = ax.lo; t <= ax.hi + step * 1e-6; t += step) {
    ax.ticks.push_back(t);
    ax.labels.push_back(tick_label(t, step));
  }
  return ax;
}
// Log axis (values > 0): ticks at 10^k, and at 2 and 5 x 10^k when it spans under 2 decades.
Axis log_axis(double lo_val, double hi_val) {
  Axis ax;
  ax.lo = std::floor(std::log10(lo_val));
  ax.hi = std::ceil(std::log10(hi_val));
  if (ax.hi <= ax.lo) ax.hi = ax.lo + 1;
  const bool fine = ax.hi - ax.lo < 2;
  for (double k = ax.lo; k <= ax.hi; ++k)
    for (double m : {1.0, 2.0, 5.0}) {
      if (m != 1.0 && (!fine || k == ax.hi)) continue;
      const double v = m * std::pow(10.0, k);
      ax.ticks.push_back(std::log10(v));
      ax.labels.push_back(tick_label(v, std::pow(10.0, std::min(k, 0.0))));
    }
  return ax;
}
}  // namespace

namespace {
// The legend goes in rows between the title and the plot: never over a line.
std::vector<std::vector<const Series*>> legend_rows(const std::vector<Series>& series, int width) {
  std::vector<std::vector<const Series*>> rows(1);
  int row_w = 0;
  for (const auto& s : series) {
    const int w = 26 + text_width(s.name);
    if (row_w + w > width - 90 && !rows.back().empty()) {
      rows.emplace_back();
      row_w = 0;
    }
    rows.back().push_back(&s);
    row_w += w;
  }
  return rows;
}

// The plot area (left, top, pw × ph pixels), its axes, and the map from values to pixels.
struct Frame {
  int left = 70, top = 0, pw = 0, ph = 0;
  Axis ax, ay;
  bool log_y = false;
  double ty(double y) const { return log_y ? (y > 0 ? std::log10(y) : NAN) : y; }
  double px(double x) const { return left + (x - ax.lo) / (ax.hi - ax.lo) * pw; }
  double py(double y) const { return top + ph - (y - ay.lo) / (ay.hi - ay.lo) * ph; }
};

// The axes over the series' finite points, with the options' bounds and cap.
void set_axes(Frame& f, const std::vector<Series>& series, const PlotOptions& opt) {
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  bool integer_x = true;
  for (const auto& s : series)
    for (size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(f.ty(s.y[i]))) continue;
      x0 = std::min(x0, s.x[i]), x1 = std::max(x1, s.x[i]);
      y0 = std::min(y0, s.y[i]), y1 = std::max(y1, s.y[i]);
      integer_x = integer_x && s.x[i] == std::round(s.x[i]);
    }
  if (!(x0 <= x1)) x0 = 0, x1 = 1, y0 = opt.log_y ? 0.1 : 0, y1 = 1;
  // Losses and other non-negative series start at 0 on a linear axis; a cap (100 %) is kept.
  if (!opt.log_y && y0 >= 0 && opt.y_from_zero) y0 = 0;
  if (!std::isnan(opt.y_max)) y1 = std::min(std::max(y1, y0), opt.y_max);
  if (!std::isnan(opt.y_min)) y0 = std::max(std::min(y0, y1), opt.y_min);
  if (!std::isnan(opt.x_min)) x0 = opt.x_min;
  if (!std::isnan(opt.x_max)) x1 = std::max(opt.x_max, x0 + 1e-9);
  f.ax = linear_axis(x0, x1, 6, integer_x);
  f.ay = opt.log_y ? log_axis(y0, y1) : linear_axis(y0, y1, 5, false);
  if (!opt.log_y && !std::isnan(opt.y_max) && f.ay.hi > opt.y_max) {  // never beyond the cap
    while (!f.ay.ticks.empty() && f.ay.ticks.back() > opt.y_max + 1e-9) {
      f.ay.ticks.pop_back();
      f.ay.labels.pop_back();
    }
    f.ay.hi = opt.y_max;
  }
}

void draw_grid(Image& img, const Frame& f) {
  const RGB black{0, 0, 0}, grid{225, 225, 225};
  for (size_t k = 0; k < f.ay.ticks.size(); ++k) {
    const int yy = static_cast<int>(f.py(f.ay.ticks[k]));
    img.fill_rect(f.left, yy, f.pw, 1, grid);
    draw_text(img, f.left - 6 - text_width(f.ay.labels[k]), yy - 3, f.ay.labels[k], black);
  }
  for (size_t k = 0; k < f.ax.ticks.size(); ++k) {
    const int xx = static_cast<int>(f.px(f.ax.ticks[k]));
    img.fill_rect(xx, f.top, 1, f.ph, grid);
    img.fill_rect(xx, f.top + f.ph, 1, 4, black);
    draw_text(img, xx - text_width(f.ax.labels[k]) / 2, f.top + f.ph + 7, f.ax.labels[k], black);
  }
  img.fill_rect(f.left, f.top, 1, f.ph + 1, black);
  img.fill_rect(f.left, f.top + f.ph, f.pw, 1, black);
}

// Segments between consecutive finite points; with few points, each one marked.
void draw_series(Image& img, const Frame& f, const Series& s) {
  bool have = false;
  double lx = 0, ly = 0;
  for (size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i) {
    double y = f.ty(s.y[i]);
    if (!std::isfinite(s.x[i]) || !std::isfinite(y)) {
      have = false;
      continue;
    }
    double cx = f.px(s.x[i]), cy = f.py(std::clamp(y, f.ay.lo, f.ay.hi));
    if (have) {
      int n = int(std::max(std::fabs(cx - lx), std::fabs(cy - ly))) + 1;
      for (int k = 0; k <= n; ++k)
        img.fill_rect(int(lx + (cx - lx) * k / n), int(ly + (cy - ly) * k / n), 2, 2, s.color);
    } else {
      img.fill_rect(int(cx) - 1, int(cy) - 1, 3, 3, s.color);
    }
    lx = cx, ly = cy, have = true;
  }
  if (std::min(s.x.size(), s.y.size()) <= 50)  // few points: mark each one
    for (size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i) {
      const double y = f.ty(s.y[i]);
      if (std::isfinite(s.x[i]) && std::isfinite(y))
        img.fill_rect(int(f.px(s.x[i])) - 2, int(f.py(std::clamp(y, f.ay.lo, f.ay.hi))) - 2, 5, 5,
                      s.color);
    }
}
}  // namespace

Image line_plot(const std::vector<Series>& series, const PlotOptions& opt) {
  Image img(std::max(200, opt.width), std::max(150, opt.height));
  const RGB black{0, 0, 0};
  const std::vector<std::vector<const Series*>> rows = legend_rows(series, img.width);
  Frame f;
  const int right = 24, bottom = 45;
  f.top = 30 + 12 * static_cast<int>(rows.size());
  f.pw = img.width - f.left - right, f.ph = img.height - f.top - bottom;
  f.log_y = opt.log_y;
  set_axes(f, series, opt);
  draw_grid(img, f);
  for (const auto& s : series) draw_series(img, f, s);
  draw_text(img, f.left, 8, opt.title, black, 2);
  draw_text(img, f.left + f.pw / 2 - text_width(opt.xlabel) / 2, img.height - 14, opt.xlabel,
            black);
  const std::string ylabel = opt.log_y ? opt.ylabel + " (log scale)" : opt.ylabel;
  draw_text(img, 6, f.top + f.ph / 2 + text_width(ylabel) / 2, ylabel, black, 1, true);
  int ly = 28;  // legend rows, between the title and the plot
  for (const auto& row : rows) {
    int lx = f.left;
    for (const Series* s : row) {
      img.fill_rect(lx, ly + 3, 16, 3, s->color);
      draw_text(img, lx + 20, ly, s->name, black);
      lx += 26 + text_width(s->name);
    }
    ly += 12;
  }
  return img;
}

Image stack_vertical(const std::vector<Image>& parts) {
  int w = 0, h = 0;
  for (const Image& p : parts) w = std::max(w, p.width), h += p.height;
  Image out(w, h);
  int y0 = 0;
  for (const Image& p : parts) {
    for (int y = 0; y < p.height; ++y)
      for (int x = 0; x < p.width; ++x) out.set(x, y0 + y, p.get(x, y));
    y0 += p.height;
  }
  return out;
}

}  // namespace tgx
