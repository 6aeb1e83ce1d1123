// A scatter plot with a fitted line, written as a PNG (libpng): what the GLM example draws. No text: the
// axes span the data's range, which the example prints.
#pragma once

#include <Eigen/Dense>
#include <string>

namespace tessera::examples {

struct ScatterPlot {
  int width = 800, height = 600;
  Eigen::VectorXd x, y;            // the points
  Eigen::VectorXd line_x, line_y;  // the line, drawn through these points in order
};

// Throws std::runtime_error when the file cannot be written.
void write_scatter_png(const ScatterPlot& plot, const std::string& path);

}  // namespace tessera::examples
