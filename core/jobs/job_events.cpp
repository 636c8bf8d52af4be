#include "core/jobs/job_events.h"

namespace crucible::jobs {

Event append_job_event(const std::filesystem::path& job_dir, const Event& event) {
    EventLogWriter writer(job_dir / "events.jsonl");
    drain_job_inbox(job_dir, writer);
    return writer.append(event);
}

}  // namespace crucible::jobs
