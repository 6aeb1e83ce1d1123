// Small helpers shared by the benchmark programs: flags, timing, medians, peak RSS.
#pragma once

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace tessera::bench {

// --name value flags; unknown flags are an error that names them.
class Flags {
 public:
  Flags(int argc, char** argv, std::map<std::string, std::string> defaults) : values_(std::move(defaults)) {
    for (int i = 1; i < argc; ++i) {
      std::string name = argv[i];
      if (name.rfind("--", 0) != 0 || !values_.count(name.substr(2)) || i + 1 >= argc)
        throw std::invalid_argument("unknown flag or missing value: " + name);
      values_[name.substr(2)] = argv[++i];
    }
  }
  std::string str(const std::string& name) const { return values_.at(name); }
  long long integer(const std::string& name) const { return std::stoll(values_.at(name)); }
  double real(const std::string& name) const { return std::stod(values_.at(name)); }

 private:
  std::map<std::string, std::string> values_;
};

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

inline double median(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  return xs[xs.size() / 2];
}

inline double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

}  // namespace tessera::bench
