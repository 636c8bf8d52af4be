#pragma once
// "Please stop" from outside the process, the same meaning on every platform: checkpoint, clean
// up and exit within a bounded time. On POSIX it is SIGTERM or SIGINT. On Windows a console
// program gets no SIGTERM: it gets console control events (Ctrl+C, Ctrl+Break, closing the
// console window), the end of the session (logoff, shutdown: WM_QUERYENDSESSION and
// WM_ENDSESSION to a hidden window of class kSessionEndWindowClass, since a program that loads
// user32 gets no console event for them) and, from a program without a console of its own to
// share (the studio stopping its local agent, the agent stopping a worker), a named event
// "Local\crucible-stop-<pid>" that request_process_stop() sets. The platform parts are
// stop_signal_posix.cpp and stop_signal_windows.cpp.
#include <chrono>

namespace crucible {

// Starts listening. Idempotent. After this, a stop request sets the flag below.
void listen_for_stop_requests();
// True once a stop request came (it stays set until cleared).
bool stop_requested();
// Sets or clears the flag (tests; a program that handled one request and goes on).
void set_stop_requested(bool value);

// Windows ends a process soon after its console is closed, the user logs off or the machine
// shuts down, as soon as the handler returns. The handler therefore waits, up to
// kStopGrace, for the program to call stop_finished() (or to exit) so its checkpoint completes.
// (A console close gives it about 5 s whatever it does; logoff and shutdown wait while the
// window's block reason is shown.)
inline constexpr std::chrono::seconds kStopGrace{20};
inline constexpr const wchar_t* kSessionEndWindowClass = L"crucible-session-end";
void stop_finished();

// Asks process `pid` to stop the way listen_for_stop_requests() hears it: SIGTERM on POSIX, the
// named event on Windows. False when the process is gone or does not listen.
bool request_process_stop(long pid);

}  // namespace crucible
