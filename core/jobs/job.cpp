#include "core/jobs/job.h"
#include "core/base/environment.h"

#include <chrono>
#include <ctime>

#include "core/base/error.h"
#include "core/base/sha256.h"

namespace crucible::jobs {

std::string new_job_id() {
    // Built by append: GCC 12 at -O3 reports a false -Wrestrict for "literal" + std::string.
    std::string id = "j";
    id += utc_time_text(std::time(nullptr), "%Y%m%d-%H%M%S");
    id += "-";
    id += random_hex(4);
    return id;
}

bool is_valid_job_id(const std::string& id) {
    if (id.empty() || id.size() > 64) return false;
    for (char c : id)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-')) return false;
    return true;
}

}  // namespace crucible::jobs
