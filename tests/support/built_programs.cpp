#include "tests/support/built_programs.h"

namespace crucible::test_support {

std::filesystem::path built_program(const std::string& name, const std::string& folder) {
#ifdef _WIN32
    const std::string file = name + ".exe";
#else
    const std::string& file = name;
#endif
    const std::filesystem::path build = CRUCIBLE_BINARY_DIR;
    const std::filesystem::path dir = build / folder;
    std::error_code ec;
    // Windows builds put every program in bin/ (the top CMakeLists.txt).
    for (const auto& base : {dir, build / "bin"})
        for (const char* config : {"", "Release", "RelWithDebInfo", "Debug", "MinSizeRel"}) {
            const auto candidate = base / config / file;
            if (std::filesystem::exists(candidate, ec)) return candidate;
        }
    return dir / file;
}

}  // namespace crucible::test_support
