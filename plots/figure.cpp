#include "plots/figure.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace tessera::plots {
namespace {

// A gnuplot string literal: double-quoted, with its backslashes and quotes escaped.
std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

const char* style_of(Series::Style style) {
  switch (style) {
    case Series::Style::points:
      return "points pt 7 ps 0.4";
    case Series::Style::lines:
      return "lines lw 2.5";
    case Series::Style::lines_points:
      return "linespoints lw 2 pt 7 ps 0.8";
  }
  return "lines";
}

// A scratch directory for the data and script, removed when it goes.
struct Scratch {
  std::filesystem::path dir;
  Scratch() {
    static std::atomic<int> count{0};
    dir = std::filesystem::temp_directory_path() /
          ("tessera-plot-" + std::to_string(getpid()) + "-" + std::to_string(++count));
    std::filesystem::create_directories(dir);
  }
  ~Scratch() {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
};

}  // namespace

void write_png(const Figure& figure, const std::filesystem::path& png) {
  if (figure.series.empty()) throw std::runtime_error("plot " + quoted(figure.title) + ": no series to draw");
  Scratch scratch;
  std::ostringstream script;
  script << "set terminal pngcairo size " << figure.width << "," << figure.height
         << " noenhanced font \"Liberation Sans,12\"\n"
         << "set output " << quoted(png.string()) << "\n"
         << "set title " << quoted(figure.title) << " font \",15\"\n"
         << "set xlabel " << quoted(figure.x_label) << "\nset ylabel " << quoted(figure.y_label) << "\n"
         << "set grid lc rgb \"#dddddd\"\nset key top left box opaque spacing 1.3\nset border 3\nset tics "
            "nomirror\n"
         << "set datafile separator \" \"\n";
  if (figure.log_x) script << "set logscale x\n";
  if (figure.log_y) script << "set logscale y\n";
  script << "plot ";
  for (std::size_t i = 0; i < figure.series.size(); ++i) {
    const auto& s = figure.series[i];
    if (s.x.size() != s.y.size())
      throw std::runtime_error("plot " + quoted(figure.title) + ": series " + quoted(s.title) + " has " +
                               std::to_string(s.x.size()) + " x values and " + std::to_string(s.y.size()) +
                               " y values");
    const auto data = scratch.dir / ("series" + std::to_string(i) + ".dat");
    std::ofstream out(data);
    out.precision(17);
    for (std::size_t k = 0; k < s.x.size(); ++k) {
      if (!std::isfinite(s.x[k]) || !std::isfinite(s.y[k])) continue;  // gaps, not points at infinity
      if ((figure.log_x && s.x[k] <= 0) || (figure.log_y && s.y[k] <= 0))
        throw std::runtime_error("plot " + quoted(figure.title) + ": series " + quoted(s.title) +
                                 " has a value <= 0 on a log axis at point " + std::to_string(k));
      out << s.x[k] << ' ' << s.y[k] << '\n';
    }
    script << (i ? ", " : "") << quoted(data.string()) << " using 1:2 with " << style_of(s.style);
    if (!s.colour.empty()) script << " lc rgb " << quoted(s.colour);
    script << " title " << quoted(s.title);
  }
  script << "\n";
  const auto script_file = scratch.dir / "figure.gp";
  std::ofstream(script_file) << script.str();
  const auto log_file = scratch.dir / "gnuplot.log";
  const std::string command =
      "gnuplot " + quoted(script_file.string()) + " > " + quoted(log_file.string()) + " 2>&1";
  const int status = std::system(command.c_str());
  if (status != 0) {
    std::ifstream in(log_file);
    std::string log((std::istreambuf_iterator<char>(in)), {});
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
      throw std::runtime_error("plot " + quoted(figure.title) +
                               ": gnuplot is not installed (Debian's gnuplot-nox)");
    throw std::runtime_error("plot " + quoted(figure.title) + ": gnuplot failed writing " + png.string() +
                             ": " + log.substr(0, 400));
  }
}

}  // namespace tessera::plots
