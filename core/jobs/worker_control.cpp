#include "core/jobs/worker_control.h"

#include "core/base/event.h"
#include "core/base/json.h"

namespace crucible::jobs {

void write_worker_request(const std::filesystem::path& job_dir, const std::string& request) {
    write_json_file(job_dir / "control.json", {{"request", request}, {"t", unix_time_now()}});
}

void clear_worker_request(const std::filesystem::path& job_dir) {
    std::error_code ec;
    std::filesystem::remove(job_dir / "control.json", ec);
}

}  // namespace crucible::jobs
