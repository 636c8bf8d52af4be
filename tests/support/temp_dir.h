#pragma once
// Temporary folders for tests, one way for every test: each folder is unique to its process and
// call (<system temp>/crucible-test-<pid>-<random>/<name>-<n>), so parallel ctest processes and
// repeated runs never share one, and nothing a test leaves outlives its process.
//
// TempDir is removed when it dies, also after a failed ASSERT_* (the assertion returns from the
// test body, so destructors run). scratch_dir() is for helpers that hand out a plain path: its
// folder lives until the process exits, then goes with the process's root folder.
#include <filesystem>
#include <string_view>

namespace crucible::test_support {

class TempDir {
  public:
    // `name` (UTF-8) appears in the folder's name, for a person looking at a kept folder.
    explicit TempDir(std::string_view name = "tmp");
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    const std::filesystem::path& path() const { return path_; }
    operator const std::filesystem::path&() const { return path_; }
    // path() / the UTF-8 relative name.
    std::filesystem::path operator/(std::string_view utf8) const;

  private:
    std::filesystem::path path_;
};

// A new empty folder that lives until the process exits.
std::filesystem::path scratch_dir(std::string_view name);

// The folder every TempDir and scratch_dir of this process is made in.
const std::filesystem::path& process_temp_root();

}  // namespace crucible::test_support
