// POSIX half of event_log.h: nothing to do, systemd's journal keeps the agent's stderr. The
// Windows twin is event_log_windows.cpp.
#ifndef _WIN32
#include "core/base/event_log.h"

namespace crucible {

bool report_event(const std::string&, EventLogType, const std::string&) {
    return false;
}

std::string register_event_source(const std::string&, const std::filesystem::path&) {
    return {};
}

std::string unregister_event_source(const std::string&) {
    return {};
}

}  // namespace crucible
#endif
