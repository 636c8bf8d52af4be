#pragma once
// UTF-8 to and from the wide strings of Windows' W functions, for the Windows platform files
// (*_windows.cpp) only; defined in file_io_windows.cpp. Throws InputError for text that is not
// UTF-8.
#include <string>

namespace crucible::platform {

std::wstring wide_from_utf8(const std::string& utf8);
std::string utf8_from_wide(const std::wstring& text);

// "<what>: <the system's text for code>", and when the code is ERROR_ACCESS_DENIED, what to do
// about it: the failure of a machine-wide change (the registry's HKLM, services).
std::string admin_failure(const std::string& what, unsigned long code);

}  // namespace crucible::platform
