// Windows service entry point for crucible-agent: `crucible-agent --install-service` registers
// it (installer/windows/install-agent-service.ps1 wraps this), the Service Control Manager then
// runs it without a console. A pre-shutdown notice becomes "checkpoint now, then stop" for the
// running workers, exactly like SIGTERM on Linux. Compiled on Windows only (and by the mingw-w64
// check in CI).
#ifdef _WIN32
#define WIN32_LEAN_AND_MEAN
#define NOMINMAX
#include <windows.h>

#include <string>

namespace crucible::agent_service_windows {

namespace {
SERVICE_STATUS_HANDLE g_handle = nullptr;
SERVICE_STATUS g_status{};
HANDLE g_stop_event = nullptr;

DWORD WINAPI control_handler(DWORD control, DWORD, LPVOID, LPVOID) {
    if (control == SERVICE_CONTROL_STOP || control == SERVICE_CONTROL_PRESHUTDOWN ||
        control == SERVICE_CONTROL_SHUTDOWN) {
        g_status.dwCurrentState = SERVICE_STOP_PENDING;
        g_status.dwWaitHint = 120000;  // workers need time to write their checkpoints
        SetServiceStatus(g_handle, &g_status);
        SetEvent(g_stop_event);
        return NO_ERROR;
    }
    return control == SERVICE_CONTROL_INTERROGATE ? NO_ERROR : ERROR_CALL_NOT_IMPLEMENTED;
}
}  // namespace

// Installs the service to run `<exe> <args>` at boot. Returns a message ("" on success).
std::wstring install(const std::wstring& name, const std::wstring& command_line) {
    SC_HANDLE scm = OpenSCManagerW(nullptr, nullptr, SC_MANAGER_CREATE_SERVICE);
    if (!scm) return L"cannot open the Service Control Manager (run as administrator)";
    SC_HANDLE svc =
        CreateServiceW(scm, name.c_str(), L"Crucible agent", SERVICE_ALL_ACCESS,
                       SERVICE_WIN32_OWN_PROCESS, SERVICE_AUTO_START, SERVICE_ERROR_NORMAL,
                       command_line.c_str(), nullptr, nullptr, nullptr, nullptr, nullptr);
    std::wstring err =
        svc ? L"" : L"CreateService failed (error " + std::to_wstring(GetLastError()) + L")";
    if (svc) {
        SERVICE_PRESHUTDOWN_INFO pre{180000};
        ChangeServiceConfig2W(svc, SERVICE_CONFIG_PRESHUTDOWN_INFO, &pre);
        CloseServiceHandle(svc);
    }
    CloseServiceHandle(scm);
    return err;
}

std::wstring uninstall(const std::wstring& name) {
    SC_HANDLE scm = OpenSCManagerW(nullptr, nullptr, SC_MANAGER_CONNECT);
    if (!scm) return L"cannot open the Service Control Manager (run as administrator)";
    SC_HANDLE svc = OpenServiceW(scm, name.c_str(), DELETE | SERVICE_STOP);
    std::wstring err;
    if (!svc)
        err = L"no service named " + name;
    else {
        SERVICE_STATUS st{};
        ControlService(svc, SERVICE_CONTROL_STOP, &st);
        if (!DeleteService(svc))
            err = L"DeleteService failed (error " + std::to_wstring(GetLastError()) + L")";
        CloseServiceHandle(svc);
    }
    CloseServiceHandle(scm);
    return err;
}

// Called from ServiceMain: reports running, waits for stop, reports stopped. `run` starts the
// agent and returns a function that stops it.
void run_as_service(const wchar_t* name, void (*start)(), void (*stop)()) {
    g_handle = RegisterServiceCtrlHandlerExW(name, control_handler, nullptr);
    g_status.dwServiceType = SERVICE_WIN32_OWN_PROCESS;
    g_status.dwControlsAccepted = SERVICE_ACCEPT_STOP | SERVICE_ACCEPT_PRESHUTDOWN;
    g_status.dwCurrentState = SERVICE_START_PENDING;
    SetServiceStatus(g_handle, &g_status);
    g_stop_event = CreateEventW(nullptr, TRUE, FALSE, nullptr);
    start();
    g_status.dwCurrentState = SERVICE_RUNNING;
    SetServiceStatus(g_handle, &g_status);
    WaitForSingleObject(g_stop_event, INFINITE);
    stop();
    g_status.dwCurrentState = SERVICE_STOPPED;
    SetServiceStatus(g_handle, &g_status);
}

}  // namespace crucible::agent_service_windows
#endif
