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

// ---- colours
// --------------------------------------------------------------------------------------
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

// ---- heatmap
// -------------------------------------------------------------------------------------
Image heatmap(const std::vector<double>& values, int rows, int cols, const HeatmapOptions& opt) {
  if (rows <= 0 || cols <= 0 || values.size() != size_t(rows) * cols)
    throw tg::Error("heatmap: " + std::to_string(values.size()) + " values for " +
                    std::to_string(rows) + "x" + std::to_string(cols) + " cells");
  if (!opt.row_labels.empty() && int(opt.row_labels.size()) != rows)
    throw tg::Error("heatmap: " + std::to_string(opt.row_labels.size()) + " row labels for " +
                    std::to_string(rows) + " rows");
  if (!opt.col_labels.empty() && int(opt.col_labels.size()) != cols)
    throw tg::Error("heatmap: " + std::to_string(opt.col_labels.size()) + " column labels for " +
                    std::to_string(cols) + " columns");
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
  Image img(w, h);
  double lo = opt.vmin, hi = opt.vmax;
  if (!(lo < hi)) {
    lo = INFINITY, hi = -INFINITY;
    for (double v : values)
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
    if (!(lo <= hi)) lo = 0, hi = 1;
    if (opt.symmetric) hi = std::max(std::fabs(lo), std::fabs(hi)), lo = -hi;
    if (hi == lo) hi = lo + 1;
  }
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

// ---- line plot
// ------------------------------------------------------------------------------------
Image line_plot(const std::vector<Series>& series, const PlotOptions& opt) {
  Image img(std::max(200, opt.width), std::max(150, opt.height));
  const RGB black{0, 0, 0}, grid{225, 225, 225};
  int left = 70, right = 20, top = 30, bottom = 45;
  int pw = img.width - left - right, ph = img.height - top - bottom;
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  auto ty = [&](double y) { return opt.log_y ? (y > 0 ? std::log10(y) : NAN) : y; };
  for (const auto& s : series)
    for (size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i) {
      double y = ty(s.y[i]);
      if (!std::isfinite(s.x[i]) || !std::isfinite(y)) continue;
      x0 = std::min(x0, s.x[i]), x1 = std::max(x1, s.x[i]);
      y0 = std::min(y0, y), y1 = std::max(y1, y);
    }
  if (!(x0 <= x1)) x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  if (x1 == x0) x1 = x0 + 1;
  if (y1 == y0) y1 = y0 + 1;
  double pad = 0.05 * (y1 - y0);
  y0 -= pad, y1 += pad;
  auto px = [&](double x) { return left + (x - x0) / (x1 - x0) * pw; };
  auto py = [&](double y) { return top + ph - (y - y0) / (y1 - y0) * ph; };
  for (int k = 0; k <= 5; ++k) {  // grid and tick labels
    double yv = y0 + (y1 - y0) * k / 5, xv = x0 + (x1 - x0) * k / 5;
    int yy = int(py(yv)), xx = int(px(xv));
    img.fill_rect(left, yy, pw, 1, grid);
    img.fill_rect(xx, top, 1, ph, grid);
    std::string yl = fmt_num(opt.log_y ? std::pow(10.0, yv) : yv), xl = fmt_num(xv);
    draw_text(img, left - 4 - text_width(yl), yy - 3, yl, black);
    draw_text(img, xx - text_width(xl) / 2, top + ph + 5, xl, black);
  }
  img.fill_rect(left, top, 1, ph, black);
  img.fill_rect(left, top + ph, pw, 1, black);
  for (const auto& s : series) {  // segments between consecutive finite points
    bool have = false;
    double lx = 0, ly = 0;
    for (size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i) {
      double y = ty(s.y[i]);
      if (!std::isfinite(s.x[i]) || !std::isfinite(y)) {
        have = false;
        continue;
      }
      double cx = px(s.x[i]), cy = py(y);
      if (have) {
        int n = int(std::max(std::fabs(cx - lx), std::fabs(cy - ly))) + 1;
        for (int k = 0; k <= n; ++k)
          img.fill_rect(int(lx + (cx - lx) * k / n), int(ly + (cy - ly) * k / n), 2, 2, s.color);
      } else {
        img.fill_rect(int(cx) - 1, int(cy) - 1, 3, 3, s.color);
      }
      lx = cx, ly = cy, have = true;
    }
  }
  draw_text(img, left, 8, opt.title, black, 2);
  draw_text(img, left + pw / 2 - text_width(opt.xlabel) / 2, img.height - 14, opt.xlabel, black);
  draw_text(img, 6, top + ph / 2 + text_width(opt.ylabel) / 2, opt.ylabel, black, 1, true);
  int ly = top + 6;  // legend
  for (const auto& s : series) {
    int lx = left + pw - text_width(s.name) - 30;
    img.fill_rect(lx, ly + 3, 16, 3, s.color);
    draw_text(img, lx + 20, ly, s.name, black);
    ly += 12;
  }
  return img;
}

}  // namespace tgx
