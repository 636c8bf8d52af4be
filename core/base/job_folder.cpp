#include "core/base/job_folder.h"

#include "core/base/file_io.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
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
    return name == layout.record() || name == layout.control() || name == layout.mirror_state() ||
           name == layout.mesh_ready() || path_to_utf8(name).find(".tmp") != std::string::npos;
}

std::string JobFolder::step_checkpoint_name(std::int64_t step) {
    char name[40];
    std::snprintf(name, sizeof name, "step-%012lld.ckpt", static_cast<long long>(step));
    return name;
}

std::optional<std::int64_t> JobFolder::step_of_checkpoint(const std::string& file_name) {
    static const std::string head = "step-", tail = ".ckpt";
    if (file_name.size() <= head.size() + tail.size() || file_name.rfind(head, 0) != 0 ||
        file_name.compare(file_name.size() - tail.size(), tail.size(), tail) != 0)
        return std::nullopt;
    const std::string digits =
        file_name.substr(head.size(), file_name.size() - head.size() - tail.size());
    if (digits.size() < 12 || digits.size() > 18 ||
        !std::all_of(digits.begin(), digits.end(),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }))
        return std::nullopt;
    return std::stoll(digits);
}

}  // namespace crucible
