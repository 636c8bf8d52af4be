// Windows half of stop_signal.h: console control events, the end of the session (logoff,
// shutdown) and the named stop event (compiled on Windows, by the mingw-w64 check, and run under
// wine in CI).
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

// Asks for the stop and holds the caller, up to kStopGrace, until the program says it is done:
// Windows ends the process as soon as the caller returns.
void stop_and_wait() {
    detail::g_stop_requested.store(true);
    const auto deadline = std::chrono::steady_clock::now() + kStopGrace;
    while (!detail::g_stop_finished.load() && std::chrono::steady_clock::now() < deadline)
        Sleep(50);
}

BOOL WINAPI on_console_event(DWORD event) {
    if (event == CTRL_C_EVENT || event == CTRL_BREAK_EVENT) {
        detail::g_stop_requested.store(true);
        return TRUE;
    }
    // Closing the console (Windows waits about 5 s, then ends the process), and logoff or
    // shutdown where they come this way (to a program that has no window).
    stop_and_wait();
    return TRUE;
}

// Logoff and shutdown reach a program that has loaded user32 (ours do, through shell32 and
// OpenSSL) only as WM_QUERYENDSESSION and WM_ENDSESSION to its top-level windows; its console
// handler is not called for them. So a hidden top-level window listens (not a message-only one:
// those get no broadcasts).
LRESULT CALLBACK on_session_message(HWND window, UINT message, WPARAM wparam, LPARAM lparam) {
    if (message == WM_QUERYENDSESSION) {
        // Shown on Windows' "apps are preventing shutdown" screen while the checkpoint is written.
        ShutdownBlockReasonCreate(window, L"Crucible is saving checkpoints of running training");
        return TRUE;
    }
    if (message == WM_ENDSESSION) {
        if (wparam) stop_and_wait();  // the session ends: the process may end once this returns
        ShutdownBlockReasonDestroy(window);
        return 0;
    }
    return DefWindowProcW(window, message, wparam, lparam);
}

void run_session_window() {
    WNDCLASSW window_class{};
    window_class.lpfnWndProc = on_session_message;
    window_class.hInstance = GetModuleHandleW(nullptr);
    window_class.lpszClassName = kSessionEndWindowClass;
    if (!RegisterClassW(&window_class)) return;
    // Top-level (no parent), never shown.
    HWND window = CreateWindowExW(0, kSessionEndWindowClass, L"Crucible", 0, 0, 0, 0, 0, nullptr,
                                  nullptr, window_class.hInstance, nullptr);
    if (!window) return;
    MSG message;
    while (GetMessageW(&message, nullptr, 0, 0) > 0)
        DispatchMessageW(&message);
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
        std::thread(run_session_window).detach();
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
