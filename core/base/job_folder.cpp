#include "core/base/job_folder.h"

#include <string>

namespace crucible {

void JobFolder::create() const {
    std::filesystem::create_directories(checkpoints());
    std::filesystem::create_directories(weights());
}

bool JobFolder::is_bookkeeping(const std::filesystem::path& relative) {
    if (relative.empty()) return false;
    const JobFolder layout{std::filesystem::path()};
    if (*relative.begin() == layout.inbox()) return true;
    const std::filesystem::path name = relative.filename();
    return name == layout.record() || name == layout.control() ||
           name.string().find(".tmp") != std::string::npos;
}

}  // namespace crucible
