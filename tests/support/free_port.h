#pragma once
// A TCP port on 127.0.0.1 that was free a moment ago, for tests that start a server process
// (Linux and Windows).
namespace crucible::test_support {

int free_loopback_port();

}  // namespace crucible::test_support
