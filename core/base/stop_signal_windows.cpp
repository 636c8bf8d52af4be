// Windows half of stop_signal.h: console control events and the named stop event (compiled on
// Windows, by the mingw-w64 check, and run under wine in CI).
#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#define NOMINMAX
#include <windows.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>

#include "core/base/stop_signal.h"

namespace crucible {
namespace detail {
extern std::atomic<bool> g_stop_requested;
extern std::atomic<bool> g_stop_finished;
}  // namespace detail

namespace {

std::wstring stop_event_name(unsigned long pid) {
    return L"Local\\crucible-stop-" + std::to_wstring(pid);
}

BOOL WINAPI on_console_event(DWORD event) {
    detail::g_stop_requested.store(true);
    if (event == CTRL_C_EVENT || event == CTRL_BREAK_EVENT) return TRUE;
    // Close, logoff, shutdown: the process ends when this returns, so give the program its
    // bounded time to checkpoint first.
    const auto deadline = std::chrono::steady_clock::now() + kStopGrace;
    while (!detail::g_stop_finished.load() && std::chrono::steady_clock::now() < deadline)
        Sleep(50);
    return TRUE;
}

void watch_stop_event(HANDLE event) {
    WaitForSingleObject(event, INFINITE);
    detail::g_stop_requested.store(true);
}

}  // namespace

void listen_for_stop_requests() {
    static std::once_flag once;
    std::call_once(once, [] {
        SetConsoleCtrlHandler(on_console_event, TRUE);
        // Manual reset, so a request that came before anyone waited is not lost. The handle lives
        // as long as the process: the watcher thread waits on it.
        HANDLE event =
            CreateEventW(nullptr, TRUE, FALSE, stop_event_name(GetCurrentProcessId()).c_str());
        if (event) std::thread(watch_stop_event, event).detach();
    });
}

bool request_process_stop(long pid) {
    if (pid <= 0) return false;
    HANDLE event = OpenEventW(EVENT_MODIFY_STATE, FALSE,
                              stop_event_name(static_cast<unsigned long>(pid)).c_str());
    if (!event) return false;
    const BOOL ok = SetEvent(event);
    CloseHandle(event);
    return ok != FALSE;
}

}  // namespace crucible
#endif
