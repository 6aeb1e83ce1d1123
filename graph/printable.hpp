// Text that came from outside (a peer's name, a cell of a CSV file, a filter) made safe to write into a
// log line or an error message: control characters and bytes that are not UTF-8 become \xNN escapes, so
// a name cannot forge a second log line or put raw binary into a terminal, and long text is cut to an
// excerpt that says how long the whole was.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace tessera {

// At most `max_bytes` of `text` (whole UTF-8 characters), escaped; longer text ends in
// "... (N bytes)".
std::string printable(std::string_view text, std::size_t max_bytes = 80);

// printable(text) in single quotes, for names in messages: 'worker-1'.
std::string in_quotes(std::string_view text, std::size_t max_bytes = 80);

}  // namespace tessera
