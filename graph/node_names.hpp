// The workers named by a batch of records (a stored run, a message of results), each once: a record
// carries a small index instead of the name, so naming who ran every set costs two bytes a record.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tessera {

class NodeNames {
 public:
  static constexpr std::size_t kMaxNames = 65535;

  // 1 + the name's place in the table (added if new); 0 for an empty name, or past kMaxNames names.
  std::uint16_t index(const std::string& name) {
    if (name.empty()) return 0;
    for (std::size_t i = 0; i < names_.size(); ++i)
      if (names_[i] == name) return static_cast<std::uint16_t>(i + 1);
    if (names_.size() >= kMaxNames) return 0;
    names_.push_back(name);
    return static_cast<std::uint16_t>(names_.size());
  }
  const std::vector<std::string>& names() const { return names_; }

 private:
  std::vector<std::string> names_;
};

}  // namespace tessera
