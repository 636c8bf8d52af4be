#include "core/engine/stop_control.h"

#include <atomic>
#include <csignal>
#include <system_error>

#include "core/base/file_io.h"
#include "core/base/json.h"

namespace crucible::engine {

namespace {

volatile std::sig_atomic_t g_signal_stop = 0;

void on_stop_signal(int) {
    g_signal_stop = 1;
}

}  // namespace

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

StopControl::StopControl(std::filesystem::path job_dir)
    : file_(std::move(job_dir) / "control.json") {}

StopRequest StopControl::poll() {
    if (g_signal_stop) {
        g_signal_stop = 0;
        return StopRequest::Checkpoint;
    }
    std::error_code ec;
    if (!std::filesystem::exists(file_, ec)) return StopRequest::None;
    std::string text;
    try {
        text = read_file_bytes_limited(file_, 4096);
    } catch (const std::exception&) {
        return StopRequest::None;  // being written; seen at the next poll
    }
    std::filesystem::remove(file_, ec);
    StopRequest request = StopRequest::Checkpoint;  // an unreadable request still stops safely
    try {
        const Json j = Json::parse(text);
        const std::string r = j.value("request", "");
        if (r == "pause") request = StopRequest::Pause;
        if (r == "cancel") request = StopRequest::Cancel;
    } catch (const std::exception&) {
    }
    return request;
}

void request_stop(const std::filesystem::path& job_dir, StopRequest request) {
    write_file_atomically(job_dir / "control.json",
                          Json{{"request", stop_request_name(request)}}.dump());
}

void install_stop_signal_handlers() {
    std::signal(SIGTERM, on_stop_signal);
    std::signal(SIGINT, on_stop_signal);
}

void set_signal_stop_flag(bool value) {
    g_signal_stop = value ? 1 : 0;
}

}  // namespace crucible::engine
