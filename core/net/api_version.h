#pragma once
// Version handshake between client and agent: the range of peer
// versions each side accepts. Clients send X-Crucible-Version; the agent answers with its own
// and refuses a pair outside the range with a message that says what to upgrade.
#include <optional>
#include <string>

namespace crucible::net {

inline constexpr int kProtocolVersion = 1;         // bumped on incompatible API changes
inline constexpr int kMinPeerProtocolVersion = 1;  // oldest peer protocol we still speak
inline constexpr const char* kVersionHeader = "X-Crucible-Protocol";

// "" when compatible, else the message for the user (names the side to upgrade).
std::string protocol_mismatch(int ours, int theirs, bool we_are_agent);

}  // namespace crucible::net
