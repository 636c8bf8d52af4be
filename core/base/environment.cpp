#include "core/base/environment.h"

namespace crucible {

std::filesystem::path sibling_program(const std::string& name, const std::string& build_folder) {
#ifdef _WIN32
    const std::filesystem::path file = std::filesystem::path(name).concat(".exe");
#else
    const std::filesystem::path file = name;
#endif
    const auto dir = this_executable().parent_path();
    const auto beside = dir / file;
    std::error_code ec;
    if (std::filesystem::exists(beside, ec)) return beside;
    const auto in_build_tree = dir.parent_path() / build_folder / file;
    if (std::filesystem::exists(in_build_tree, ec)) return in_build_tree;
    return beside;
}

}  // namespace crucible
