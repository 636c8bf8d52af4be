#include "core/jobs/job_events.h"

#include <cstdio>

#include "core/base/job_folder.h"
#include "core/base/json.h"
#include "core/jobs/job_snapshot.h"

namespace crucible::jobs {

Event append_job_event(const std::filesystem::path& job_dir, const Event& event) {
    EventLogWriter writer(JobFolder{job_dir}.events());
    drain_job_inbox(job_dir, writer);
    return writer.append(event);
}

std::string allocator_note(const std::filesystem::path& job_dir) {
    // The last 64 KiB hold many report windows; a long log is not read whole for an alarm.
    std::string note;
    visit_recent_events(JobFolder{job_dir}.events(), 64u << 10, [&note](const Json& event) {
        if (event.value("kind", "") != event_kind::kMetric) return true;
        const Json values = event.value("values", Json::object());
        const Json allocated = values.value(metric_key::kGpuMemAllocatedGib, Json());
        const Json reserved = values.value(metric_key::kGpuMemReservedGib, Json());
        if (!allocated.is_number() || !reserved.is_number()) return true;
        char text[96];
        std::snprintf(text, sizeof text,
                      " (the job's allocator: allocated %.1f GiB, reserved %.1f GiB)",
                      allocated.get<double>(), reserved.get<double>());
        note = text;
        return false;
    });
    return note;
}

}  // namespace crucible::jobs
