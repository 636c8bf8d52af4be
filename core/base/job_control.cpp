#include "core/base/job_control.h"

#include <system_error>

#include "core/base/event.h"
#include "core/base/file_io.h"
#include "core/base/json.h"

namespace crucible {

const char* stop_request_name(StopRequest request) {
    switch (request) {
        case StopRequest::Pause:
            return "pause";
        case StopRequest::Cancel:
            return "cancel";
        case StopRequest::Checkpoint:
            return "checkpoint";
        case StopRequest::None:
            break;
    }
    return "none";
}

std::optional<StopRequest> parse_stop_request(const std::string& name) {
    for (const StopRequest r : {StopRequest::Pause, StopRequest::Cancel, StopRequest::Checkpoint})
        if (name == stop_request_name(r)) return r;
    return std::nullopt;
}

void write_stop_request(const JobFolder& job, StopRequest request) {
    write_file_atomically(
        job.control(),
        Json{{"request", stop_request_name(request)}, {"t", unix_time_now()}}.dump());
}

void clear_stop_request(const JobFolder& job) {
    std::error_code ec;
    std::filesystem::remove(job.control(), ec);
}

namespace {

StopRequest read_stop_request(const JobFolder& job, bool remove) {
    const std::filesystem::path file = job.control();
    std::error_code ec;
    if (!std::filesystem::exists(file, ec)) return StopRequest::None;
    std::string text;
    try {
        text = read_file_bytes_limited(file, 4096);
    } catch (const std::exception&) {
        return StopRequest::None;  // being written; seen at the next poll
    }
    if (remove) std::filesystem::remove(file, ec);
    try {
        if (auto request = parse_stop_request(Json::parse(text).value("request", "")))
            return *request;
    } catch (const std::exception&) {
    }
    return StopRequest::Checkpoint;
}

}  // namespace

StopRequest take_stop_request(const JobFolder& job) {
    return read_stop_request(job, true);
}

StopRequest peek_stop_request(const JobFolder& job) {
    return read_stop_request(job, false);
}

}  // namespace crucible
