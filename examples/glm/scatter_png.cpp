#include "scatter_png.hpp"

#include <png.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <vector>

namespace tessera::examples {

namespace {

using Rgb = std::array<unsigned char, 3>;

struct Canvas {
  int width, height;
  std::vector<unsigned char> pixels;  // rows of RGB

  Canvas(int w, int h, Rgb background) : width(w), height(h), pixels(static_cast<std::size_t>(w * h * 3)) {
    for (int i = 0; i < w * h; ++i) std::copy(background.begin(), background.end(), pixels.begin() + i * 3);
  }
  void set(int px, int py, Rgb color) {
    if (px < 0 || py < 0 || px >= width || py >= height) return;
    std::copy(color.begin(), color.end(), pixels.begin() + (py * width + px) * 3);
  }
  void disc(double cx, double cy, double radius, Rgb color) {
    for (int dy = -static_cast<int>(radius); dy <= static_cast<int>(radius); ++dy)
      for (int dx = -static_cast<int>(radius); dx <= static_cast<int>(radius); ++dx)
        if (dx * dx + dy * dy <= radius * radius)
          set(static_cast<int>(std::lround(cx)) + dx, static_cast<int>(std::lround(cy)) + dy, color);
  }
  void segment(double x0, double y0, double x1, double y1, double thickness, Rgb color) {
    const int steps = static_cast<int>(std::max(std::abs(x1 - x0), std::abs(y1 - y0))) + 1;
    for (int s = 0; s <= steps; ++s) {
      const double t = static_cast<double>(s) / steps;
      disc(x0 + t * (x1 - x0), y0 + t * (y1 - y0), thickness, color);
    }
  }
};

}  // namespace

void write_scatter_png(const ScatterPlot& plot, const std::string& path) {
  const int margin = 40;
  Canvas canvas(plot.width, plot.height, {255, 255, 107});  // the seed's face colour (1.0, 1.0, 0.42)
  const double x_min = std::min(plot.x.minCoeff(), plot.line_x.minCoeff());
  const double x_max = std::max(plot.x.maxCoeff(), plot.line_x.maxCoeff());
  const double y_min = std::min(plot.y.minCoeff(), plot.line_y.minCoeff());
  const double y_max = std::max(plot.y.maxCoeff(), plot.line_y.maxCoeff());
  auto px = [&](double v) { return margin + (v - x_min) / (x_max - x_min) * (plot.width - 2 * margin); };
  auto py = [&](double v) {
    return plot.height - margin - (v - y_min) / (y_max - y_min) * (plot.height - 2 * margin);
  };
  const Rgb frame{0, 0, 0}, point{31, 119, 180}, fitted{0, 0, 0};
  canvas.segment(margin, plot.height - margin, plot.width - margin, plot.height - margin, 0.5, frame);
  canvas.segment(margin, margin, margin, plot.height - margin, 0.5, frame);
  for (Eigen::Index i = 0; i < plot.x.size(); ++i) canvas.disc(px(plot.x[i]), py(plot.y[i]), 1.5, point);
  for (Eigen::Index i = 1; i < plot.line_x.size(); ++i)
    canvas.segment(px(plot.line_x[i - 1]), py(plot.line_y[i - 1]), px(plot.line_x[i]), py(plot.line_y[i]),
                   1.5, fitted);

  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!file) throw std::runtime_error("cannot write " + path);
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!info || setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    throw std::runtime_error("libpng failed writing " + path);
  }
  png_init_io(png, file.get());
  png_set_IHDR(png, info, static_cast<png_uint_32>(plot.width), static_cast<png_uint_32>(plot.height), 8,
               PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  for (int row = 0; row < plot.height; ++row) png_write_row(png, canvas.pixels.data() + row * plot.width * 3);
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
}

}  // namespace tessera::examples
