#include "tests/support/temp_dir.h"
#include "core/base/environment.h"

#include <atomic>
#include <cstdlib>
#include <string>
#include <system_error>

#include "core/base/file_io.h"
#include "core/base/sha256.h"

namespace crucible::test_support {
namespace {

namespace fs = std::filesystem;

// The process's root folder, removed when the process exits normally (every test passed or
// not). CRUCIBLE_KEEP_TEST_DIRS=1 keeps it, for a person who wants to look.
class ProcessRoot {
  public:
    ProcessRoot() {
        path_ = fs::temp_directory_path() /
                ("crucible-test-" + std::to_string(platform::process_id()) + "-" + random_hex(4));
        fs::create_directories(path_);
    }
    ~ProcessRoot() {
        const auto keep = crucible::environment_variable("CRUCIBLE_KEEP_TEST_DIRS");
        if (keep && !keep->empty() && *keep != "0") return;
        std::error_code ec;
        fs::remove_all(path_, ec);
    }
    const fs::path& path() const { return path_; }

  private:
    fs::path path_;
};

fs::path new_folder(std::string_view name) {
    static std::atomic<unsigned> counter{0};
    const fs::path dir =
        process_temp_root() / path_from_utf8(std::string(name) + "-" + std::to_string(++counter));
    fs::create_directories(dir);
    return dir;
}

}  // namespace

const std::filesystem::path& process_temp_root() {
    static const ProcessRoot root;
    return root.path();
}

TempDir::TempDir(std::string_view name) : path_(new_folder(name)) {}

TempDir::~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
}

std::filesystem::path TempDir::operator/(std::string_view utf8) const {
    return path_ / path_from_utf8(utf8);
}

std::filesystem::path scratch_dir(std::string_view name) {
    return new_folder(name);
}

}  // namespace crucible::test_support
