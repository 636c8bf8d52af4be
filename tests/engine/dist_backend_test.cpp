// Which backend carries a rank's GPU tensors (core/engine/distributed.h): NCCL for CUDA ranks
// where the build has it, Gloo otherwise, and a clear refusal of NCCL where it cannot work.
#include <gtest/gtest.h>

#include "core/base/error.h"
#include "core/engine/distributed.h"

namespace crucible::engine {
namespace {

TEST(DistBackend, AutoIsNcclForCudaRanksWhereTheBuildHasIt) {
    EXPECT_EQ(gpu_collective_backend("auto", "cpu"), "gloo");
    EXPECT_EQ(gpu_collective_backend("auto", "cuda:1"), nccl_available() ? "nccl" : "gloo");
    EXPECT_EQ(gpu_collective_backend("gloo", "cuda:0"), "gloo");
#if defined(_WIN32)
    EXPECT_FALSE(nccl_available()) << "Windows has no NCCL";
#endif
}

TEST(DistBackend, NcclIsRefusedWhereItCannotWork) {
    const auto refused = [](const std::string& requested, const std::string& device,
                            const std::string& says) {
        try {
            gpu_collective_backend(requested, device);
            ADD_FAILURE() << requested << " on " << device << " was accepted";
        } catch (const InputError& e) {
            const std::string what = e.what();
            EXPECT_NE(what.find("dist_backend"), std::string::npos) << what;
            EXPECT_NE(what.find(says), std::string::npos) << what;
        }
    };
    refused("nccl", "cpu", "CUDA tensors only");
    refused("mpi", "cuda:0", "not auto, gloo or nccl");
    if (!nccl_available())
        refused("nccl", "cuda:0", "no NCCL");
    else
        EXPECT_EQ(gpu_collective_backend("nccl", "cuda:0"), "nccl");
}

}  // namespace
}  // namespace crucible::engine
