// Outside Windows the service is systemd's: crucible-agent.service next to this file.
#ifndef _WIN32
#include <sys/stat.h>

#include "app/agent/service_control.h"

namespace crucible::agent {

static const char* const kUseSystemd =
    "Windows services exist on Windows only; on Linux install the systemd unit "
    "crucible-agent.service (lib/systemd/system) and run: systemctl enable --now crucible-agent";

std::string install_service(const std::string&, const std::vector<std::string>&) {
    return kUseSystemd;
}
std::string uninstall_service(const std::string&) {
    return kUseSystemd;
}
std::string run_as_service(const std::string&, const std::function<void()>&,
                           const std::function<void()>&) {
    return kUseSystemd;
}

ServiceResult install_and_start_service(const std::string&, const std::vector<std::string>&) {
    ServiceResult r;
    r.not_here = true;
    r.error =
        "not a Windows machine: installer/linux/setup-crucible-server.sh installs and starts "
        "the systemd unit";
    return r;
}

FirewallResult open_firewall_port(const std::string&, int port) {
    FirewallResult r;
    const std::string p = std::to_string(port);
    r.advice = "not changed here: where a firewall runs, open TCP " + p + " (ufw allow " + p +
               "/tcp, or firewall-cmd --permanent --add-port=" + p + "/tcp)";
    return r;
}

void make_new_files_private() {
    ::umask(077);
}

}  // namespace crucible::agent
#endif
