// A CSV cell (RFC 4180), as every CSV Tessera writes has it: quoted, with its quotes doubled, when it holds
// a separator, a quote or a line break (or always, for text that must read back as text), so that text
// from a simulation or a task cannot add cells or rows.
#pragma once

#include <string>

namespace tessera {

inline std::string csv_cell(const std::string& text, bool always_quote = false) {
  if (!always_quote && text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) (out += c) += c == '"' ? "\"" : "";
  return out + "\"";
}

}  // namespace tessera
