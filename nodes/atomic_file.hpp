// A file written whole or not at all (a partial file renamed over it), so that another process polling
// for it (a launcher waiting for a node's address, a node reading a job's keys) never reads half of it.
#pragma once

#include <filesystem>
#include <string>

namespace tessera {

// Throws std::runtime_error naming the file when it cannot be written or renamed.
void write_file_atomically(const std::filesystem::path& file, const std::string& text,
                           std::filesystem::perms perms = std::filesystem::perms::owner_read |
                                                          std::filesystem::perms::owner_write |
                                                          std::filesystem::perms::group_read |
                                                          std::filesystem::perms::others_read);

}  // namespace tessera
