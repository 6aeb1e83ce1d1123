// A figure of points and lines, written as a PNG by gnuplot (its pngcairo terminal): a title, labelled
// axes with ticks, a legend naming each series. What examples/glm draws, and the benches' figures.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace tessera::plots {

struct Series {
  enum class Style { points, lines, lines_points };
  std::string title;  // its entry in the legend
  std::vector<double> x, y;
  Style style = Style::lines;
  std::string colour{};  // "#rrggbb"; empty: gnuplot's next colour
};

struct Figure {
  std::string title;
  std::string x_label, y_label;
  bool log_x = false, log_y = false;
  int width = 960, height = 640;
  std::vector<Series> series;
};

// Writes `figure` to `png`. Throws std::runtime_error naming what failed: gnuplot missing (install
// gnuplot-nox), a series whose x and y differ in length, a non-positive value on a log axis, gnuplot's
// own error, or a file that cannot be written.
void write_png(const Figure& figure, const std::filesystem::path& png);

}  // namespace tessera::plots
