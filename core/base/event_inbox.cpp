#include "core/base/event_inbox.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <vector>

#include "core/base/file_io.h"
#include "core/base/job_folder.h"
#include "core/base/json.h"

namespace crucible {

std::filesystem::path job_inbox(const std::filesystem::path& job_dir) {
    return JobFolder{job_dir}.inbox();
}

void post_to_job_inbox(const std::filesystem::path& job_dir, const Event& event) {
    static std::atomic<unsigned> counter{0};
    Event e = event;
    if (e.t == 0) e.t = unix_time_now();
    Json j = event_to_json(e);
    j.erase("seq");
    // Names sort in posting order: nanoseconds since the epoch, then a per-process counter.
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count();
    char name[64];
    std::snprintf(name, sizeof name, "%020lld-%08u.json", static_cast<long long>(ns),
                  counter++ % 100000000u);
    write_file_atomically(job_inbox(job_dir) / name, j.dump() + "\n");
}

std::size_t drain_job_inbox(const std::filesystem::path& job_dir, EventLogWriter& writer) {
    const auto inbox = job_inbox(job_dir);
    std::error_code ec;
    if (!std::filesystem::is_directory(inbox, ec)) return 0;
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(inbox, ec))
        if (entry.path().extension() == ".json") files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    std::size_t appended = 0;
    for (const auto& file : files) {
        Event event;
        try {
            Json j = parse_json(read_file_bytes_limited(file, 1u << 20), path_to_utf8(file));
            if (j.is_object()) j["seq"] = 0;  // assigned by the writer
            event = event_from_json(j, path_to_utf8(file));
        } catch (const std::exception& e) {
            spdlog::warn("job inbox: setting aside {}: {}", path_to_utf8(file), e.what());
            auto bad = file;
            bad += ".bad";
            std::filesystem::rename(file, bad, ec);
            continue;
        }
        writer.append(event);  // a full disk throws here and leaves the file for later
        ++appended;
        std::filesystem::remove(file, ec);
    }
    return appended;
}

}  // namespace crucible
