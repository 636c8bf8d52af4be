// crucible-agent as a service: the Windows command-line quoting the service entry is built with,
// and the real executable's answer to the service flags on Linux (use the systemd unit).
#include <cstdio>

#include "app/agent/service_control.h"
#include "core/base/child_process.h"
#include "core/base/environment.h"
#include "core/base/file_io.h"
#include "tests/agent/agent_test_util.h"

using namespace crucible;

TEST(AgentServiceControl, WindowsArgumentQuotingFollowsCommandLineToArgvRules) {
    struct Case {
        const char* in;
        const char* out;
    };
    for (const auto& c : std::vector<Case>{
             {"plain", "plain"},
             {"", "\"\""},
             {"C:\\Program Files\\Crucible\\data", "\"C:\\Program Files\\Crucible\\data\""},
             {"C:\\data dir\\", "\"C:\\data dir\\\\\""},  // trailing backslash doubled
             {"say \"hi\"", "\"say \\\"hi\\\"\""},
             {"a\\\"b", "\"a\\\\\\\"b\""},  // backslash before a quote: doubled, quote escaped
             {"C:\\no\\spaces", "C:\\no\\spaces"},
             {"\xe6\x95\xb0\xe6\x8d\xae \xe7\x9b\xae\xe5\xbd\x95",
              "\"\xe6\x95\xb0\xe6\x8d\xae "
              "\xe7\x9b\xae\xe5\xbd\x95\""}})
        EXPECT_EQ(quote_windows_argument(c.in), c.out) << c.in;
}

#ifndef _WIN32
TEST(AgentServiceControl, ServiceFlagsOnLinuxPointToSystemd) {
    auto dir = test::fresh_dir("service_flags");
    for (const char* flag : {"--install-service", "--uninstall-service", "--service"}) {
        ChildOptions o;
        o.program = CRUCIBLE_AGENT_EXE;
        o.args = {flag, "--data", path_to_utf8(dir / "data"), "--nvml", "/nonexistent/nvml.so"};
        o.log_file = dir / "out.log";
        auto child = ChildProcess::start(o);
        auto exit = child->wait();
        EXPECT_NE(exit.code, 0) << flag;
        std::string out = read_file_bytes(dir / "out.log");
        EXPECT_NE(out.find("systemd"), std::string::npos) << flag << ": " << out;
    }
    std::filesystem::remove_all(dir);
}
#endif
