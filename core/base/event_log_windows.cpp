// Windows half of event_log.h: the Application event log (compiled on Windows, by the mingw-w64
// check and in the wine tests). The POSIX twin is event_log_posix.cpp.
#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#define NOMINMAX
#include <windows.h>

#include "core/base/event_log.h"
#include "core/base/wide_text_windows.h"

namespace crucible {
namespace {

using platform::wide_from_utf8;

std::wstring registration_key(const std::string& source) {
    return L"SYSTEM\\CurrentControlSet\\Services\\EventLog\\Application\\" + wide_from_utf8(source);
}

WORD event_type(EventLogType type) {
    switch (type) {
        case EventLogType::Information:
            return EVENTLOG_INFORMATION_TYPE;
        case EventLogType::Warning:
            return EVENTLOG_WARNING_TYPE;
        case EventLogType::Error:
            return EVENTLOG_ERROR_TYPE;
    }
    return EVENTLOG_ERROR_TYPE;
}

}  // namespace

bool report_event(const std::string& source, EventLogType type, const std::string& text) {
    HANDLE handle = RegisterEventSourceW(nullptr, wide_from_utf8(source).c_str());
    if (!handle) return false;
    const std::wstring wide = wide_from_utf8(text);
    LPCWSTR strings[] = {wide.c_str()};
    const BOOL ok =
        ReportEventW(handle, event_type(type), 0, kEventMessageId, nullptr, 1, 0, strings, nullptr);
    DeregisterEventSource(handle);
    return ok != FALSE;
}

std::string register_event_source(const std::string& source,
                                  const std::filesystem::path& message_file) {
    HKEY key = nullptr;
    LSTATUS rc = RegCreateKeyExW(HKEY_LOCAL_MACHINE, registration_key(source).c_str(), 0, nullptr,
                                 0, KEY_SET_VALUE, nullptr, &key, nullptr);
    if (rc != ERROR_SUCCESS)
        return platform::admin_failure("cannot register event source " + source,
                                       static_cast<DWORD>(rc));
    const std::wstring file = message_file.wstring();
    const DWORD types = EVENTLOG_ERROR_TYPE | EVENTLOG_WARNING_TYPE | EVENTLOG_INFORMATION_TYPE;
    rc = RegSetValueExW(key, L"EventMessageFile", 0, REG_EXPAND_SZ,
                        reinterpret_cast<const BYTE*>(file.c_str()),
                        static_cast<DWORD>((file.size() + 1) * sizeof(wchar_t)));
    if (rc == ERROR_SUCCESS)
        rc = RegSetValueExW(key, L"TypesSupported", 0, REG_DWORD,
                            reinterpret_cast<const BYTE*>(&types), sizeof types);
    RegCloseKey(key);
    return rc == ERROR_SUCCESS ? std::string()
                               : platform::admin_failure("cannot register event source " + source,
                                                         static_cast<DWORD>(rc));
}

std::string unregister_event_source(const std::string& source) {
    const LSTATUS rc = RegDeleteKeyW(HKEY_LOCAL_MACHINE, registration_key(source).c_str());
    if (rc == ERROR_SUCCESS || rc == ERROR_FILE_NOT_FOUND) return {};
    return platform::admin_failure("cannot remove event source " + source, static_cast<DWORD>(rc));
}

}  // namespace crucible
#endif
