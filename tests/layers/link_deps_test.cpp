// POSIX-only test: reads ELF link dependencies with ldd.
// Reads the dynamic link dependencies of the studio and agent executables (ldd) and fails if
// LibTorch or CUDA is among them. The worker, which must link both, is the control that shows
// the check can see them (it is not built with CRUCIBLE_WITH_TORCH=OFF).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

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
bool mentions_cuda(const std::string& deps) {
    return deps.find("libcudart") != std::string::npos ||
           deps.find("libtorch_cuda") != std::string::npos;
}
std::filesystem::path exe(const char* name) {
    return std::filesystem::path(CRUCIBLE_BINARY_DIR) / "app" / name;
}
}  // namespace

#ifdef BUILT_CRUCIBLE_WORKER
TEST(LinkDeps, WorkerLinksLibTorchWithCudaSoTheCheckCanSeeIt) {
    auto path = exe("worker/crucible-worker");
    ASSERT_TRUE(std::filesystem::exists(path)) << path;
    const std::string deps = ldd(path);
    EXPECT_TRUE(mentions_torch(deps)) << deps;
    EXPECT_TRUE(mentions_cuda(deps)) << deps;
}

// PyPI's libtorch.so exports the std::filesystem of the newer libstdc++ it was built with; the
// system's libstdc++ must be found first or those copies take our calls (and crash).
TEST(LinkDeps, WorkerFindsTheSystemLibstdcxxBeforeLibTorch) {
    const std::string deps = ldd(exe("worker/crucible-worker"));
    const auto cxx = deps.find("libstdc++");
    const auto torch = deps.find("libtorch");
    ASSERT_NE(cxx, std::string::npos) << deps;
    ASSERT_NE(torch, std::string::npos) << deps;
    EXPECT_LT(cxx, torch) << deps;
}
#endif

TEST(LinkDeps, AgentAndStudioDoNotLinkLibTorch) {
    std::vector<const char*> names;
#ifdef BUILT_CRUCIBLE_AGENT
    names.push_back("agent/crucible-agent");
#endif
#ifdef BUILT_CRUCIBLE_STUDIO
    names.push_back("studio/crucible-studio");
#endif
    ASSERT_FALSE(names.empty()) << "neither the agent nor the studio was built";
    for (const char* name : names) {
        auto path = exe(name);
        ASSERT_TRUE(std::filesystem::exists(path)) << path;
        std::string deps = ldd(path);
        EXPECT_FALSE(mentions_torch(deps)) << name << " links LibTorch:\n" << deps;
        EXPECT_FALSE(mentions_cuda(deps)) << name << " links CUDA:\n" << deps;
    }
}
