#include "dashboard/token_file.hpp"

#include <algorithm>
#include <fstream>
#include <stdexcept>

namespace tessera::dashboard {

std::string read_token_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument("cannot read \"" + path + "\"");
  char buffer[1024];  // read bounded, whatever the file is
  in.read(buffer, sizeof buffer);
  std::string text(buffer, static_cast<std::size_t>(in.gcount()));
  const auto begin = text.find_first_not_of(" \t\r\n");
  text = begin == std::string::npos ? "" : text.substr(begin, text.find_first_of(" \t\r\n", begin) - begin);
  const bool printable = std::all_of(text.begin(), text.end(), [](char c) { return c > ' ' && c < 127; });
  if (text.size() < 16 || text.size() > 256 || !printable)
    throw std::invalid_argument("\"" + path +
                                "\" must hold a token of 16 to 256 printable characters as its first word");
  return text;
}

}  // namespace tessera::dashboard
