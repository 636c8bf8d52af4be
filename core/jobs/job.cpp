#include "core/jobs/job.h"

#include <chrono>
#include <ctime>

#include "core/base/error.h"
#include "core/base/sha256.h"

namespace crucible::jobs {

std::string new_job_id() {
    std::time_t now = std::time(nullptr);
    std::tm tm{};
#ifdef _WIN32
    gmtime_s(&tm, &now);
#else
    gmtime_r(&now, &tm);
#endif
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
    return std::string("j") + buf + "-" + random_hex(4);
}

bool is_valid_job_id(const std::string& id) {
    if (id.empty() || id.size() > 64) return false;
    for (char c : id)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-')) return false;
    return true;
}

}  // namespace crucible::jobs
