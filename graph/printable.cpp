#include "graph/printable.hpp"

#include <algorithm>

namespace tessera {
namespace {

// The length of the well-formed UTF-8 character at text[i] (overlong forms and surrogates refused),
// or 0 when the bytes there are not one.
std::size_t utf8_length(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  std::size_t length = 0;
  unsigned char low = 0x80, high = 0xBF;  // the range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  if (byte(i + 1) < low || byte(i + 1) > high) return 0;
  for (std::size_t k = 2; k < length; ++k)
    if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return 0;
  return length;
}

}  // namespace

std::string printable(std::string_view text, std::size_t max_bytes) {
  // The common case, a short name in plain ASCII, as it is.
  if (text.size() <= max_bytes &&
      std::all_of(text.begin(), text.end(), [](char c) { return c >= 0x20 && c < 0x7F; }))
    return std::string(text);
  static const char* digits = "0123456789abcdef";
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    std::string piece;
    std::size_t used = 1;
    if (c >= 0x20 && c < 0x7F) {
      piece.assign(1, static_cast<char>(c));
    } else if (const std::size_t length = c >= 0x80 ? utf8_length(text, i) : 0) {
      piece.assign(text.substr(i, length));
      used = length;
    } else {
      piece = {'\\', 'x', digits[c >> 4], digits[c & 15]};
    }
    if (out.size() + piece.size() > max_bytes) break;
    out += piece;
    i += used;
  }
  if (i < text.size()) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

std::string in_quotes(std::string_view text, std::size_t max_bytes) {
  // Appended, not `"'" + ... + "'"`: that form trips GCC 12's false -Wrestrict (its bug 105329).
  std::string out(1, '\'');
  out += printable(text, max_bytes);
  out += '\'';
  return out;
}

}  // namespace tessera
