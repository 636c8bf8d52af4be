#pragma once
// Where this build put one of its programs, for tests that start the real executables: the
// program's folder in the build tree (bin/ on Windows, where every program goes), with ".exe" on
// Windows, or a configuration folder inside it (Release/, Debug/, ...) for multi-config
// generators (Visual Studio, Ninja Multi-Config).
#include <filesystem>
#include <string>

namespace crucible::test_support {

// `folder` is relative to the build tree, e.g. built_program("crucible-agent", "app/agent").
// The single-config path when the program is in none of the places (so a skip message names it).
std::filesystem::path built_program(const std::string& name, const std::string& folder);

}  // namespace crucible::test_support
