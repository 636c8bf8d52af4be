// The environment a launcher gives its ranks (core/jobs/rank_launcher.h): GPUs numbered as NVML
// numbers them, and on one server NCCL kept on loopback unless the administrator chose.
#include "core/jobs/rank_launcher.h"

#include <gtest/gtest.h>

#include "core/base/environment.h"
#include "core/base/gpu_ref.h"

namespace crucible::jobs {
namespace {

RankLaunch launch_of(bool several_servers) {
    RankPlan plan = plan_ranks("0,1", 1);
    if (several_servers) plan.share = ServerShare{};
    return worker_rank_launch("crucible-worker", "job", false, plan);
}

TEST(RankLaunch, OneServerKeepsNcclOnLoopbackUnlessTheEnvironmentSaysOtherwise) {
    unset_environment_variable(kNcclSocketInterfaceVariable);
    const RankLaunch one = launch_of(false);
    EXPECT_EQ(one.env.at(kCudaDeviceOrderVariable), kCudaDeviceOrderPciBus);
    EXPECT_EQ(one.env.at(kNcclSocketInterfaceVariable), "lo");
    // Several servers: NCCL must reach the others over the network (README: use Gloo there, or
    // a private network).
    EXPECT_EQ(launch_of(true).env.count(kNcclSocketInterfaceVariable), 0u);
    // The administrator's choice stands: the ranks inherit it.
    set_environment_variable(kNcclSocketInterfaceVariable, "ib0");
    EXPECT_EQ(launch_of(false).env.count(kNcclSocketInterfaceVariable), 0u);
    unset_environment_variable(kNcclSocketInterfaceVariable);
}

}  // namespace
}  // namespace crucible::jobs
