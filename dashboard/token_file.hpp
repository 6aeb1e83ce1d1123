// The dashboard's bearer token, read from a file: its first word, 16 to 256 printable ASCII characters.
#pragma once

#include <string>

namespace tessera::dashboard {

// Throws std::invalid_argument saying what is wrong (the file cannot be read, or holds no such token).
std::string read_token_file(const std::string& path);

}  // namespace tessera::dashboard
