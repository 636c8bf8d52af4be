#include "core/jobs/job_events.h"

#include <cstdio>
#include <fstream>

#include "core/base/job_folder.h"
#include "core/base/json.h"

namespace crucible::jobs {

Event append_job_event(const std::filesystem::path& job_dir, const Event& event) {
    EventLogWriter writer(JobFolder{job_dir}.events());
    drain_job_inbox(job_dir, writer);
    return writer.append(event);
}

std::string allocator_note(const std::filesystem::path& job_dir) {
    // The last 64 KiB hold many report windows; a long log is not read whole for an alarm.
    constexpr std::streamoff kTail = 64 << 10;
    std::ifstream in(JobFolder{job_dir}.events(), std::ios::binary | std::ios::ate);
    if (!in) return "";
    const std::streamoff size = in.tellg();
    in.seekg(size > kTail ? size - kTail : 0);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::size_t end = text.size();
    while (end > 0) {
        const std::size_t start = text.rfind('\n', end - 1);
        const std::size_t from = start == std::string::npos ? 0 : start + 1;
        const std::string line = text.substr(from, end - from);
        end = start == std::string::npos ? 0 : start;
        const Json event = Json::parse(line, nullptr, false);
        if (!event.is_object() || event.value("kind", "") != event_kind::kMetric) continue;
        const Json values = event.value("values", Json::object());
        const Json allocated = values.value(metric_key::kGpuMemAllocatedGib, Json());
        const Json reserved = values.value(metric_key::kGpuMemReservedGib, Json());
        if (!allocated.is_number() || !reserved.is_number()) continue;
        char note[96];
        std::snprintf(note, sizeof note,
                      " (the job's allocator: allocated %.1f GiB, reserved %.1f GiB)",
                      allocated.get<double>(), reserved.get<double>());
        return note;
    }
    return "";
}

}  // namespace crucible::jobs
