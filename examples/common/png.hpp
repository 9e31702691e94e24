// examples/common/png.hpp — pictures the examples write: an RGB image, a PNG writer (libpng,
// written atomically), a 5x7 bitmap font for labels, attention heatmaps with tokens on the axes,
// and line plots (loss curves).
//
// Not here: anything beyond what the examples draw. Text is ASCII; other code points are drawn
// as '?'. Labels longer than the room they have are cut with '~'.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace tgx {

struct RGB {
  uint8_t r = 0, g = 0, b = 0;
};

struct Image {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;  // height * width * 3, row-major

  Image() = default;
  Image(int w, int h, RGB fill = {255, 255, 255});
  void set(int x, int y, RGB c);  // ignores pixels outside the image
  RGB get(int x, int y) const;
  void fill_rect(int x, int y, int w, int h, RGB c);
};

// Writes an 8-bit RGB PNG through tg::write_file_atomic. Throws tg::Error naming the path.
void write_png(const std::string& path, const Image& img);
// Reads a PNG written by write_png (or any 8-bit RGB/RGBA/gray PNG); for tests and tools.
Image read_png(const std::string& path);

// 5x7 font in 6x9 cells (scale multiplies). vertical draws bottom-to-top (for column labels).
constexpr int kGlyphW = 6, kGlyphH = 9;
void draw_text(Image& img, int x, int y, const std::string& text, RGB color, int scale = 1,
               bool vertical = false);
int text_width(const std::string& text, int scale = 1);

// A perceptual colormap (viridis-like) for t in [0, 1]; NaN is drawn grey.
RGB colormap(double t);

struct HeatmapOptions {
  std::string title;
  std::vector<std::string> row_labels;  // one per row (queries), or empty
  std::vector<std::string> col_labels;  // one per column (keys), or empty
  int cell = 0;               // pixels per cell; 0 picks 4..24 so the image stays under ~1000 px
  bool symmetric = false;     // colour scale centred on 0 (for gradients like dP, dS)
  double vmin = 0, vmax = 0;  // fixed colour range when vmin < vmax; else the data's range
};
// values: rows * cols, row-major (e.g. one head's P, (T, S)). Labels are drawn when the cell is
// tall enough to fit them; a colour bar with the range is drawn on the right.
Image heatmap(const std::vector<double>& values, int rows, int cols, const HeatmapOptions& opt);

struct Series {
  std::string name;
  std::vector<double> x, y;
  RGB color{31, 119, 180};
};
struct PlotOptions {
  std::string title, xlabel, ylabel;
  bool log_y = false;               // the y label then says "(log scale)"; ticks at 1, 2, 5 x 10^k
  bool y_from_zero = true;          // a linear axis over non-negative data starts at 0
  double y_min = NAN, y_max = NAN;  // clamps of the axis range (e.g. y_max = 100 for percents)
  double x_min = NAN, x_max = NAN;  // fixed x range (panels of one figure share it)
  int width = 800, height = 500;
};
// Line plot with axes, ticks at round numbers (1-2-5 steps; whole numbers when every x is whole)
// and a legend in rows above the plot area (never over the data); non-finite points skipped;
// a series of at most 50 points also gets a marker at each point.
Image line_plot(const std::vector<Series>& series, const PlotOptions& opt);
// Images one above the other (panels of one figure), left-aligned on white.
Image stack_vertical(const std::vector<Image>& parts);

}  // namespace tgx
