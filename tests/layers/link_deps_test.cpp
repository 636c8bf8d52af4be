// Reads the dynamic link dependencies of the studio and agent executables (ldd) and fails if
// LibTorch is among them. The worker, which must link LibTorch, is the control that shows the
// check can see it.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

namespace {
std::string ldd(const std::filesystem::path& exe) {
    std::string cmd = "ldd '" + exe.string() + "' 2>&1";
    std::string out;
    if (FILE* p = popen(cmd.c_str(), "r")) {
        char buf[4096];
        while (std::fgets(buf, sizeof buf, p))
            out += buf;
        pclose(p);
    }
    return out;
}
bool mentions_torch(const std::string& deps) {
    return deps.find("libtorch") != std::string::npos || deps.find("libc10") != std::string::npos;
}
std::filesystem::path exe(const char* name) {
    return std::filesystem::path(CRUCIBLE_BINARY_DIR) / "app" / name;
}
}  // namespace

TEST(LinkDeps, WorkerLinksLibTorchSoTheCheckCanSeeIt) {
    auto path = exe("worker/crucible-worker");
    ASSERT_TRUE(std::filesystem::exists(path)) << path;
    EXPECT_TRUE(mentions_torch(ldd(path)));
}

TEST(LinkDeps, AgentAndStudioDoNotLinkLibTorch) {
    int checked = 0;
    for (const char* name : {"agent/crucible-agent", "studio/crucible-studio"}) {
        auto path = exe(name);
        if (!std::filesystem::exists(path)) continue;  // built by later issues
        ++checked;
        std::string deps = ldd(path);
        EXPECT_FALSE(mentions_torch(deps)) << name << " links LibTorch:\n" << deps;
    }
    RecordProperty("executables_checked", checked);
}
