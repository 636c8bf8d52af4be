#pragma once
// The layer table of DESIGN.md as include rules, checked over a source tree.
#include <filesystem>
#include <string>
#include <vector>

namespace crucible::layers {

struct Violation {
    std::string file;  // relative to the tree root
    int line = 0;
    std::string include;
    std::string rule;
};

// Scans core/, plugins/, ui/ and app/ below `root` (*.h, *.hpp, *.cpp).
std::vector<Violation> check_tree(const std::filesystem::path& root);

}  // namespace crucible::layers
