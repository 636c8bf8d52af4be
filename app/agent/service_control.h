#pragma once
// Running crucible-agent as a system service. On Windows: a Service Control Manager entry
// (`crucible-agent --install-service --listen ... --data ...` registers it; the SCM then starts
// `crucible-agent --service ...` without a console, and a stop or pre-shutdown notice becomes
// "checkpoint now, then stop" for the running workers, exactly like SIGTERM on Linux). On Linux
// the service is the systemd unit crucible-agent.service; the functions say so.
// Standard library only: the Windows implementation is compile-checked with mingw-w64.
#include <functional>
#include <string>
#include <vector>

namespace crucible::agent {

inline constexpr const char* kDefaultServiceName = "crucible-agent";

// Registers this executable as an auto-start service running `<exe> --service <args>`
// (UTF-8 args). Returns "" on success, else what went wrong and what to do.
std::string install_service(const std::string& name, const std::vector<std::string>& args);
std::string uninstall_service(const std::string& name);

// install_service, then start it and wait (up to 60 s) until it runs. A service that exists
// already is started, not installed again. On Linux `not_here` is set: the systemd unit (and
// installer/linux/setup-crucible-server.sh) does that job.
struct ServiceResult {
    bool installed = false;  // this call registered it
    bool not_here = false;   // no Windows service on this platform
    std::string detail;      // what happened, when it worked
    std::string error;       // what went wrong
    std::string advice;      // what to do about it
};
ServiceResult install_and_start_service(const std::string& name,
                                        const std::vector<std::string>& args);

// Opens inbound TCP `port` in Windows Firewall under rule `rule` (an older rule of that name is
// replaced). Elsewhere nothing is changed: `advice` says how to open the port by hand.
struct FirewallResult {
    bool opened = false;
    std::string error;   // why it could not be opened ("" when it was, or on Linux)
    std::string advice;  // what to do by hand
};
FirewallResult open_firewall_port(const std::string& rule, int port);

// Hands the process to the Service Control Manager: runs `start`, reports running, waits for
// a stop / pre-shutdown / shutdown notice, runs `stop`, reports stopped. Returns "" after a clean
// stop, else why it could not run as a service (e.g. started from a console).
std::string run_as_service(const std::string& name, const std::function<void()>& start,
                           const std::function<void()>& stop);

// The Windows account the service runs as: its virtual account "NT SERVICE\<name>" (no
// password, no LocalSystem powers; workers inherit it). The data folder grants it full access.
std::string service_account(const std::string& name);

// Files and folders this process creates from now on are its owner's alone (POSIX: umask 077,
// so the data folder is 0700 and the TLS key and tokens.json 0600 from the moment they exist,
// with no window in between). Windows: the data folder's protected access list
// (make_folder_private in core/base/folder_access.h) is inherited by everything made in it.
void make_new_files_private();

}  // namespace crucible::agent
