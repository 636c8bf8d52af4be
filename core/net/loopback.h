#pragma once
// Whether a host name is this machine's loopback: the only place where the agent serves, and
// clients send tokens, over plain HTTP without being told otherwise.
#include <string>

namespace crucible::net {

// True for "localhost", an IPv4 address 127.x.y.z written as four decimal numbers, and ::1
// (bare or in brackets). "127.evil.example" is a host name like any other, not loopback.
bool is_loopback_host(const std::string& host);

}  // namespace crucible::net
