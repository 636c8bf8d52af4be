#pragma once
// The system's log, for what a service must not lose: its start errors and its alarms. On
// Windows that is the Application event log; a service has no console, and an error that reaches
// only agent.log is lost when the data folder itself is the problem. On POSIX these do nothing:
// systemd's journal keeps what the agent writes to stderr. The platform parts are
// event_log_posix.cpp and event_log_windows.cpp.
#include <filesystem>
#include <string>

namespace crucible {

enum class EventLogType { Information, Warning, Error };

// Every event is reported under this message id. Each of our executables carries it in its
// message table as "%1" (resources/windows/crucible.rc.in), so Event Viewer shows the event's
// text as it is.
inline constexpr unsigned long kEventMessageId = 1;

// Writes one event under `source` (the service's name). False where it could not be written,
// and on POSIX.
bool report_event(const std::string& source, EventLogType type, const std::string& text);

// Registers `source` in the Application log with `message_file`, the executable that holds the
// message table; without it Event Viewer shows "the description for Event ID 1 cannot be found"
// instead of the text. Needs administrator rights. Returns "" or what went wrong (on POSIX "").
std::string register_event_source(const std::string& source,
                                  const std::filesystem::path& message_file);
// Removes the registration (none is fine). Returns "" or what went wrong.
std::string unregister_event_source(const std::string& source);

}  // namespace crucible
