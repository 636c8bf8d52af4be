#include "app/agent/service_control.h"

namespace crucible::agent {

std::string service_account(const std::string& name) {
    return "NT SERVICE\\" + name;
}

}  // namespace crucible::agent
