// Reading a set's result from what its program printed or wrote (ProgramResultSpec): the last number,
// a regex's capture groups, a JSON file, or a file of numbers. Every failure is a ResultError whose
// message names where it looked and what it found there.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "graph/program_spec.hpp"
#include "graph/value.hpp"

namespace tessera::programs {

class ResultError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The most of a result file that is read: its last 16 MiB (a regex looks at the last 1 MiB).
inline constexpr std::size_t kMaxResultFileBytes = std::size_t{16} << 20;
inline constexpr std::size_t kMaxRegexBytes = std::size_t{1} << 20;
// The regex format matches line by line, each line's first this many bytes.
inline constexpr std::size_t kMaxRegexLineBytes = 4096;

// The set's result: a double when one number is read, else a vector of doubles (in `outputs` order for
// a JSON object). `stdout_tail` is the end of what the program printed (`stdout_bytes` in all; json and
// numbers fail when the tail lost its beginning, as when the file exceeds kMaxResultFileBytes); `directory`
// the set's.
Value read_program_result(const ProgramResultSpec& spec, std::string_view stdout_tail,
                          const std::string& directory, std::uint64_t stdout_bytes = 0);

// The last number in `text` (a token such as "1.5e-3", "-2", "inf"), if there is one.
bool last_number(std::string_view text, double& out);

}  // namespace tessera::programs
