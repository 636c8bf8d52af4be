// Windows service entry point for crucible-agent (see service_control.h):
// `crucible-agent --install-service --listen ... --data ...` registers it, the Service Control
// Manager then runs `crucible-agent --service ...` without a console. A stop, pre-shutdown or
// shutdown notice becomes "checkpoint now, then stop" for the running workers, exactly like
// SIGTERM on Linux. Compiled on Windows only (and by the mingw-w64 check in CI).
#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#define NOMINMAX
#include <windows.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>

#include "app/agent/service_control.h"
#include "core/base/child_process.h"
#include "core/base/environment.h"
#include "core/base/event_log.h"
#include "core/base/file_io.h"
#include "core/base/wide_text_windows.h"

namespace crucible::agent {

namespace {

SERVICE_STATUS_HANDLE g_handle = nullptr;
SERVICE_STATUS g_status{};
std::mutex g_status_mutex;  // g_status is reported from several threads
HANDLE g_stop_event = nullptr;
std::wstring g_name;
std::string g_name_utf8;  // the event source too (registered by install_service)
const std::function<void()>* g_start = nullptr;
const std::function<void()>* g_stop = nullptr;
std::string g_error;

using crucible::platform::wide_from_utf8;

std::string error_text(const char* what, DWORD code) {
    std::string text = std::string(what) + " failed (Windows error " + std::to_string(code) + ")";
    if (code == ERROR_ACCESS_DENIED) text += ": run it from an administrator prompt";
    return text;
}

void report(DWORD state, DWORD wait_hint = 0) {
    // The control handler (the dispatcher's thread), with_progress's ticker and service_main all
    // report: one at a time, so the checkpoint counts up and no half-written status is sent.
    const std::lock_guard lock(g_status_mutex);
    g_status.dwCurrentState = state;
    g_status.dwWaitHint = wait_hint;
    // Pending states must show progress: the SCM takes a checkpoint that stops advancing for
    // longer than the wait hint as a hung service.
    const bool pending = state == SERVICE_START_PENDING || state == SERVICE_STOP_PENDING;
    g_status.dwCheckPoint = pending ? g_status.dwCheckPoint + 1 : 0;
    if (g_handle) SetServiceStatus(g_handle, &g_status);
}

// The error to the Application event log under the service's name: a service has no console,
// and an error only in agent.log is lost when the data folder itself is the problem.
void log_error_event(const std::string& text) {
    report_event(g_name_utf8, EventLogType::Error, text);
}

void accept_controls(DWORD controls) {
    const std::lock_guard lock(g_status_mutex);
    g_status.dwControlsAccepted = controls;
}

// Runs `work` while reporting `state` every 5 s with an advancing checkpoint.
template <typename Work>
void with_progress(DWORD state, DWORD wait_hint, Work&& work) {
    std::atomic<bool> done{false};
    report(state, wait_hint);
    std::thread ticker([&] {
        while (!done.load()) {
            for (int i = 0; i < 50 && !done.load(); ++i)
                Sleep(100);
            if (!done.load()) report(state, wait_hint);
        }
    });
    try {
        work();
    } catch (...) {
        done = true;
        ticker.join();
        throw;
    }
    done = true;
    ticker.join();
}

DWORD WINAPI control_handler(DWORD control, DWORD, LPVOID, LPVOID) {
    if (control == SERVICE_CONTROL_STOP || control == SERVICE_CONTROL_PRESHUTDOWN ||
        control == SERVICE_CONTROL_SHUTDOWN) {
        report(SERVICE_STOP_PENDING, 30000);  // service_main reports progress from here on
        SetEvent(g_stop_event);
        return NO_ERROR;
    }
    return control == SERVICE_CONTROL_INTERROGATE ? NO_ERROR : ERROR_CALL_NOT_IMPLEMENTED;
}

void WINAPI service_main(DWORD, LPWSTR*) {
    // The event exists before the handler that sets it can be called.
    g_stop_event = CreateEventW(nullptr, TRUE, FALSE, nullptr);
    g_handle = RegisterServiceCtrlHandlerExW(g_name.c_str(), control_handler, nullptr);
    if (!g_handle) {
        g_error = error_text("RegisterServiceCtrlHandlerEx", GetLastError());
        log_error_event(g_error);
        return;
    }
    g_status.dwServiceType = SERVICE_WIN32_OWN_PROCESS;
    // No controls while starting: a stop now would find nothing to stop.
    accept_controls(0);
    try {
        with_progress(SERVICE_START_PENDING, 30000, [] { (*g_start)(); });
    } catch (const std::exception& e) {
        g_error = std::string("the agent could not start: ") + e.what();
        log_error_event(g_error);
        g_status.dwWin32ExitCode = ERROR_SERVICE_SPECIFIC_ERROR;
        g_status.dwServiceSpecificExitCode = 1;
        report(SERVICE_STOPPED);
        return;
    }
    accept_controls(SERVICE_ACCEPT_STOP | SERVICE_ACCEPT_PRESHUTDOWN | SERVICE_ACCEPT_SHUTDOWN);
    report(SERVICE_RUNNING);
    WaitForSingleObject(g_stop_event, INFINITE);
    accept_controls(0);
    try {
        // The scheduler waits a bounded time for the workers' checkpoints (stop_grace).
        with_progress(SERVICE_STOP_PENDING, 30000, [] { (*g_stop)(); });
    } catch (const std::exception& e) {
        g_error = std::string("stopping the agent: ") + e.what();
        log_error_event(g_error);
    }
    report(SERVICE_STOPPED);
}

}  // namespace

void make_new_files_private() {}

std::string install_service(const std::string& name, const std::vector<std::string>& args) {
    wchar_t exe[32768];
    DWORD n = GetModuleFileNameW(nullptr, exe, 32768);
    if (n == 0 || n >= 32768) return error_text("GetModuleFileName", GetLastError());
    std::wstring command = L"\"" + std::wstring(exe, n) + L"\" --service";
    for (const auto& a : args)
        command += L" " + wide_from_utf8(crucible::quote_windows_argument(a));
    SC_HANDLE scm = OpenSCManagerW(nullptr, nullptr, SC_MANAGER_CREATE_SERVICE);
    if (!scm) return error_text("OpenSCManager", GetLastError());
    const std::wstring wname = wide_from_utf8(name);
    // Its own virtual account: no password to keep, none of LocalSystem's powers, and an
    // identity the data folder's access list names (make_folder_private).
    const std::wstring account = wide_from_utf8(service_account(name));
    SC_HANDLE svc =
        CreateServiceW(scm, wname.c_str(), L"Crucible agent", SERVICE_ALL_ACCESS,
                       SERVICE_WIN32_OWN_PROCESS, SERVICE_AUTO_START, SERVICE_ERROR_NORMAL,
                       command.c_str(), nullptr, nullptr, nullptr, account.c_str(), nullptr);
    std::string err;
    if (!svc) {
        DWORD code = GetLastError();
        err =
            code == ERROR_SERVICE_EXISTS
                ? "a service named " + name + " exists already; remove it with --uninstall-service"
                : error_text("CreateService", code);
    } else {
        SERVICE_DESCRIPTIONW description{
            const_cast<LPWSTR>(L"Crucible GPU training server: HTTP API, job queue, GPUs")};
        ChangeServiceConfig2W(svc, SERVICE_CONFIG_DESCRIPTION, &description);
        SERVICE_SID_INFO sid_info{SERVICE_SID_TYPE_UNRESTRICTED};  // a virtual account needs it
        ChangeServiceConfig2W(svc, SERVICE_CONFIG_SERVICE_SID_INFO, &sid_info);
        SERVICE_PRESHUTDOWN_INFO pre{180000};  // time for checkpoints before Windows shuts down
        ChangeServiceConfig2W(svc, SERVICE_CONFIG_PRESHUTDOWN_INFO, &pre);
        SC_ACTION restart{SC_ACTION_RESTART, 5000};
        SERVICE_FAILURE_ACTIONSW failure{};
        failure.dwResetPeriod = 3600;
        failure.cActions = 1;
        failure.lpsaActions = &restart;
        ChangeServiceConfig2W(svc, SERVICE_CONFIG_FAILURE_ACTIONS, &failure);
        // Without this flag the restart fires only on a crash, not when the agent exits with
        // an error (a start failure is reported as SERVICE_STOPPED with an exit code).
        SERVICE_FAILURE_ACTIONS_FLAG on_errors{TRUE};
        ChangeServiceConfig2W(svc, SERVICE_CONFIG_FAILURE_ACTIONS_FLAG, &on_errors);
        CloseServiceHandle(svc);
        // The service's start errors and alarms go to the Application log under its name, with
        // this executable's message table.
        err = register_event_source(name, std::filesystem::path(std::wstring(exe, n)));
    }
    CloseServiceHandle(scm);
    return err;
}

std::string uninstall_service(const std::string& name) {
    SC_HANDLE scm = OpenSCManagerW(nullptr, nullptr, SC_MANAGER_CONNECT);
    if (!scm) return error_text("OpenSCManager", GetLastError());
    const std::wstring wname = wide_from_utf8(name);
    SC_HANDLE svc = OpenServiceW(scm, wname.c_str(), DELETE | SERVICE_STOP | SERVICE_QUERY_STATUS);
    std::string err;
    if (!svc) {
        DWORD code = GetLastError();
        err = code == ERROR_SERVICE_DOES_NOT_EXIST ? "no service named " + name
                                                   : error_text("OpenService", code);
    } else {
        SERVICE_STATUS st{};
        if (ControlService(svc, SERVICE_CONTROL_STOP, &st)) {
            // Wait (bounded) for the workers' checkpoints before the entry goes.
            for (int i = 0;
                 i < 360 && QueryServiceStatus(svc, &st) && st.dwCurrentState != SERVICE_STOPPED;
                 ++i)
                Sleep(500);
        }
        if (!DeleteService(svc)) err = error_text("DeleteService", GetLastError());
        CloseServiceHandle(svc);
        if (err.empty()) err = unregister_event_source(name);
    }
    CloseServiceHandle(scm);
    return err;
}

ServiceResult install_and_start_service(const std::string& name,
                                        const std::vector<std::string>& args) {
    ServiceResult r;
    const std::string install_error = install_service(name, args);
    if (install_error.empty()) {
        r.installed = true;
    } else if (install_error.find("exists already") == std::string::npos) {
        r.error = install_error;
        r.advice = "run setup from an administrator prompt";
        return r;
    }
    SC_HANDLE scm = OpenSCManagerW(nullptr, nullptr, SC_MANAGER_CONNECT);
    if (!scm) {
        r.error = error_text("OpenSCManager", GetLastError());
        return r;
    }
    const std::wstring wname = wide_from_utf8(name);
    SC_HANDLE svc = OpenServiceW(scm, wname.c_str(), SERVICE_START | SERVICE_QUERY_STATUS);
    if (!svc) {
        r.error = error_text("OpenService", GetLastError());
        CloseServiceHandle(scm);
        return r;
    }
    if (!StartServiceW(svc, 0, nullptr) && GetLastError() != ERROR_SERVICE_ALREADY_RUNNING) {
        r.error = error_text("StartService", GetLastError());
        r.advice = "see the Application event log (source " + name + ") and agent.log";
    } else {
        SERVICE_STATUS st{};
        for (int i = 0;
             i < 120 && QueryServiceStatus(svc, &st) && st.dwCurrentState == SERVICE_START_PENDING;
             ++i)
            Sleep(500);
        if (st.dwCurrentState == SERVICE_RUNNING) {
            r.detail = name + (r.installed ? " installed and running as " : " running as ") +
                       service_account(name);
        } else {
            r.error = name + " did not reach the running state";
            r.advice = "see the Application event log (source " + name + ") and agent.log";
        }
    }
    CloseServiceHandle(svc);
    CloseServiceHandle(scm);
    return r;
}

FirewallResult open_firewall_port(const std::string& rule, int port) {
    FirewallResult r;
    r.advice = "open inbound TCP " + std::to_string(port) + " in Windows Defender Firewall";
    const auto system_root = crucible::nonempty_environment_variable("SystemRoot");
    const std::filesystem::path netsh =
        crucible::path_from_utf8(system_root.value_or("C:\\Windows")) / "System32" / "netsh.exe";
    const auto log = std::filesystem::temp_directory_path() / "crucible-setup-netsh.log";
    const auto run = [&](std::vector<std::string> args) {
        ChildOptions child;
        child.program = netsh;
        child.args = std::move(args);
        child.log_file = log;
        auto exit = ChildProcess::start(child)->wait_for(std::chrono::seconds(60));
        return exit && exit->code == 0;
    };
    try {
        run({"advfirewall", "firewall", "delete", "rule", "name=" + rule});  // none is fine
        if (run({"advfirewall", "firewall", "add", "rule", "name=" + rule, "dir=in", "action=allow",
                 "protocol=TCP", "localport=" + std::to_string(port)}))
            r.opened = true;
        else
            r.error = "netsh could not add the rule (see " + crucible::path_to_utf8(log) + ")";
    } catch (const std::exception& e) {
        r.error = e.what();
    }
    return r;
}

std::string run_as_service(const std::string& name, const std::function<void()>& start,
                           const std::function<void()>& stop) {
    g_name = wide_from_utf8(name);
    g_name_utf8 = name;
    g_start = &start;
    g_stop = &stop;
    g_error.clear();
    SERVICE_TABLE_ENTRYW table[] = {{g_name.data(), service_main}, {nullptr, nullptr}};
    if (!StartServiceCtrlDispatcherW(table)) {
        DWORD code = GetLastError();
        if (code == ERROR_FAILED_SERVICE_CONTROLLER_CONNECT)
            return "--service is for the Service Control Manager; run crucible-agent without it "
                   "from a console, or install the service with --install-service";
        return error_text("StartServiceCtrlDispatcher", code);
    }
    return g_error;
}

}  // namespace crucible::agent
#endif
