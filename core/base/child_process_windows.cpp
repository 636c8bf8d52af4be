// Windows child processes: CreateProcessW with stdout/stderr to the log file, no console window
// (workers of a Windows service have no console), inside a Job Object that kills them when this
// process ends, however it ends: no worker trains on headless after its agent is gone (a stop
// first asks them to checkpoint; the job object is the backstop).
#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#define NOMINMAX
#include <windows.h>

#include <string>
#include <vector>

#include "core/base/child_process.h"
#include "core/base/environment.h"
#include "core/base/error.h"
#include "core/base/file_io.h"

namespace crucible {
namespace {

// One job object per process, kept open for its life: its last handle closes when this process
// ends, and the system then ends every process in it.
HANDLE children_job() {
    static HANDLE job = [] {
        HANDLE h = CreateJobObjectW(nullptr, nullptr);
        if (!h) return h;
        JOBOBJECT_EXTENDED_LIMIT_INFORMATION limits{};
        limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
        if (!SetInformationJobObject(h, JobObjectExtendedLimitInformation, &limits,
                                     sizeof(limits))) {
            CloseHandle(h);
            return HANDLE{nullptr};
        }
        return h;
    }();
    return job;
}

class WindowsChild final : public ChildProcess {
  public:
    explicit WindowsChild(PROCESS_INFORMATION pi) : pi_(pi) {}
    ~WindowsChild() override {
        CloseHandle(pi_.hThread);
        CloseHandle(pi_.hProcess);
    }
    long pid() const override { return static_cast<long>(pi_.dwProcessId); }
    std::optional<ExitInfo> poll() override {
        if (WaitForSingleObject(pi_.hProcess, 0) != WAIT_OBJECT_0) return std::nullopt;
        return exit_info();
    }
    ExitInfo wait() override {
        WaitForSingleObject(pi_.hProcess, INFINITE);
        return exit_info();
    }
    void kill() override { TerminateProcess(pi_.hProcess, 137); }

  private:
    ExitInfo exit_info() const {
        DWORD code = 0;
        GetExitCodeProcess(pi_.hProcess, &code);
        ExitInfo e;
        e.code = static_cast<int>(code);
        return e;
    }
    PROCESS_INFORMATION pi_;
};

}  // namespace

std::unique_ptr<ChildProcess> ChildProcess::start(const ChildOptions& o) {
    std::wstring cmd = path_from_utf8(quote_windows_argument(path_to_utf8(o.program))).wstring();
    for (const auto& a : o.args)
        cmd += L" " + path_from_utf8(quote_windows_argument(a)).wstring();

    // Environment block: the agent's, with overrides.
    std::wstring block;
    LPWCH env = GetEnvironmentStringsW();
    for (LPWCH p = env; *p; p += wcslen(p) + 1) {
        std::wstring kv = p;
        auto eq = kv.find(L'=', 1);
        bool overridden = false;
        for (const auto& [k, v] : o.env)
            if (eq != std::wstring::npos && kv.substr(0, eq) == path_from_utf8(k).wstring())
                overridden = true;
        if (!overridden) block += kv + L'\0';
    }
    FreeEnvironmentStringsW(env);
    for (const auto& [k, v] : o.env)
        block += path_from_utf8(k).wstring() + L"=" + path_from_utf8(v).wstring() + L'\0';
    block += L'\0';

    SECURITY_ATTRIBUTES sa{sizeof(sa), nullptr, TRUE};
    HANDLE log = INVALID_HANDLE_VALUE;
    if (!o.log_file.empty())
        log = CreateFileW(o.log_file.c_str(), FILE_APPEND_DATA, FILE_SHARE_READ | FILE_SHARE_WRITE,
                          &sa, OPEN_ALWAYS, FILE_ATTRIBUTE_NORMAL, nullptr);
    STARTUPINFOEXW si{};
    si.StartupInfo.cb = sizeof(si);
    si.StartupInfo.dwFlags = STARTF_USESTDHANDLES;
    si.StartupInfo.hStdOutput = log;
    si.StartupInfo.hStdError = log;
    si.StartupInfo.hStdInput = nullptr;
    // Only the log handle is inherited, never the agent's sockets or its own log: a worker that
    // outlives the agent must not hold a client connection open.
    const bool inherit = log != INVALID_HANDLE_VALUE;
    SIZE_T list_size = 0;
    InitializeProcThreadAttributeList(nullptr, 1, 0, &list_size);
    std::vector<char> list_storage(list_size);
    auto* list = reinterpret_cast<LPPROC_THREAD_ATTRIBUTE_LIST>(list_storage.data());
    // Suspended until it is in the job object, so not even its first instructions run outside.
    DWORD flags =
        CREATE_NO_WINDOW | CREATE_UNICODE_ENVIRONMENT | CREATE_NEW_PROCESS_GROUP | CREATE_SUSPENDED;
    if (inherit && InitializeProcThreadAttributeList(list, 1, 0, &list_size) &&
        UpdateProcThreadAttribute(list, 0, PROC_THREAD_ATTRIBUTE_HANDLE_LIST, &log, sizeof(log),
                                  nullptr, nullptr)) {
        si.lpAttributeList = list;
        flags |= EXTENDED_STARTUPINFO_PRESENT;
    }
    PROCESS_INFORMATION pi{};
    std::wstring workdir = o.working_dir.wstring();
    BOOL ok = CreateProcessW(nullptr, cmd.data(), nullptr, nullptr, inherit ? TRUE : FALSE, flags,
                             block.data(), workdir.empty() ? nullptr : workdir.c_str(),
                             &si.StartupInfo, &pi);
    if (si.lpAttributeList) DeleteProcThreadAttributeList(list);
    if (log != INVALID_HANDLE_VALUE) CloseHandle(log);
    if (!ok)
        throw Error("cannot start " + path_to_utf8(o.program) + ": " +
                    platform::windows_error_text(GetLastError()));
    HANDLE job = children_job();
    if (!job || !AssignProcessToJobObject(job, pi.hProcess)) {
        const std::string reason = platform::windows_error_text(GetLastError());
        TerminateProcess(pi.hProcess, 1);
        CloseHandle(pi.hThread);
        CloseHandle(pi.hProcess);
        throw Error("cannot start " + path_to_utf8(o.program) +
                    ": cannot put it in the agent's job object: " + reason);
    }
    ResumeThread(pi.hThread);
    return std::make_unique<WindowsChild>(pi);
}

}  // namespace crucible
#endif
