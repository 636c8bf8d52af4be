#include "core/net/api_version.h"

namespace crucible::net {

// Each side accepts any peer at or above its own minimum; the newer side keeps speaking the
// older protocol as long as that minimum allows it.
std::string protocol_mismatch(int ours, int theirs, bool we_are_agent) {
    if (theirs >= kMinPeerProtocolVersion) return "";
    const std::string detail =
        "protocol " + std::to_string(theirs) + " is older than the oldest this " +
        (we_are_agent ? "agent" : "client") + " accepts (" +
        std::to_string(kMinPeerProtocolVersion) + ", ours is " + std::to_string(ours) + ")";
    return we_are_agent ? "the client's " + detail + ": upgrade Crucible on the client computer"
                        : "the agent's " + detail + ": upgrade crucible-agent on the server";
}

}  // namespace crucible::net
