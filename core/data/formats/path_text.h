#pragma once
// Pure path and text helpers of the dataset formats (std only, no OpenCV).
#include <filesystem>
#include <string>
#include <string_view>

namespace crucible::data::detail {

// Text safe for messages and JSON: invalid UTF-8 bytes become "\xNN".
std::string safe_utf8(std::string_view text);
// Absolute, lexically normal, without a trailing separator.
std::filesystem::path normalized_absolute(const std::filesystem::path& path);
// True when `candidate` equals `root` or lies under it, judged on the lexically normalized
// absolute paths (no symlink resolution: a dataset folder may hold symlinks to other disks on
// purpose; what is refused is "../" and absolute paths elsewhere in a hostile data.yaml).
bool lexically_inside(const std::filesystem::path& root, const std::filesystem::path& candidate);
// A path for messages: relative to `root` when inside it, escaped like safe_utf8.
std::string display_path(const std::filesystem::path& path, const std::filesystem::path& root);

}  // namespace crucible::data::detail
