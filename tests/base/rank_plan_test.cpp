// device / ranks → one device per rank, the rank arguments a launcher passes, and the slice of
// a global batch each rank takes (core/base/rank_plan.h).
#include "core/base/rank_plan.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/base/error.h"

namespace crucible {
namespace {

TEST(RankPlan, DeviceListsAndCpuRanksBecomeOneDevicePerRank) {
    EXPECT_EQ(plan_ranks("", 1).devices, std::vector<std::string>{""});
    EXPECT_FALSE(plan_ranks("0", 1).distributed());
    EXPECT_EQ(plan_ranks("cpu", 3).devices, (std::vector<std::string>{"cpu", "cpu", "cpu"}));
    EXPECT_EQ(plan_ranks(" 0, 1,2,3 ", 1).devices, (std::vector<std::string>{"0", "1", "2", "3"}));
    EXPECT_EQ(plan_ranks("0,1", 2).world_size(), 2);
    EXPECT_EQ(plan_ranks("GPU-8f2c,MIG-1a2b", 1).devices,
              (std::vector<std::string>{"gpu-8f2c", "mig-1a2b"}));
}

TEST(RankPlan, RefusesPlansThatCannotRunWithAMessageNamingTheOption) {
    const struct {
        const char* device;
        int ranks;
        const char* field;
        const char* says;
    } cases[] = {
        {"cpu", 0, "ranks", "at least 1"},       {"", 2, "ranks", "device=cpu"},
        {"auto", 4, "ranks", "device=cpu"},      {"0", 2, "ranks", "one device each"},
        {"0,1", 3, "ranks", "lists 2 GPUs"},     {"0,,1", 1, "device", "empty entry"},
        {"0,1,0", 1, "device", "names 0 twice"},
    };
    for (const auto& c : cases) {
        try {
            plan_ranks(c.device, c.ranks);
            ADD_FAILURE() << c.device << " ranks=" << c.ranks << " was accepted";
        } catch (const InputError& e) {
            EXPECT_EQ(e.where(), c.field) << c.device;
            EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos) << e.what();
        }
    }
}

TEST(RankPlan, RankArgumentsRoundTripAndBadValuesAreRefused) {
    // (Built whole: GCC 12 at -O3 warns falsely about assigning a literal to store_host.)
    const RankAddress a{2,
                        4,
                        std::string("10.0.0.7"),
                        29500,
                        std::string("3"),
                        4242,
                        std::string("1234567"),
                        std::string("10.0.0.9")};
    const auto args = rank_arguments(a);
    RankAddress b;
    for (std::size_t i = 0; i < args.size(); ++i)
        ASSERT_TRUE(take_rank_argument(args, i, b)) << args[i];
    EXPECT_EQ(b.rank, 2);
    EXPECT_EQ(b.world_size, 4);
    EXPECT_EQ(b.store_host, "10.0.0.7");
    EXPECT_EQ(b.store_port, 29500);
    EXPECT_EQ(b.device, "3");
    EXPECT_EQ(b.launcher_pid, 4242);
    EXPECT_EQ(b.launcher_token, "1234567");
    EXPECT_EQ(b.host, "10.0.0.9") << "a rank of a run over several servers binds this address";
    EXPECT_NO_THROW(check_rank_address(b));
    // A rank of a run on one machine binds the machine's default: no --rank-host at all.
    RankAddress local = a;
    local.host.clear();
    const auto local_args = rank_arguments(local);
    EXPECT_EQ(std::find(local_args.begin(), local_args.end(), "--rank-host"), local_args.end());

    std::size_t i = 0;
    RankAddress c;
    EXPECT_FALSE(take_rank_argument({"--job", "x"}, i, c));
    const std::pair<const char*, const char*> hostile[] = {{"--rank", nullptr},
                                                           {"--rank", "-1"},
                                                           {"--rank", "1x"},
                                                           {"--rank", "1e9"},
                                                           {"--world-size", "0"},
                                                           {"--store", "nohost"},
                                                           {"--store", ":80"},
                                                           {"--store", "h:99999"},
                                                           {"--store", "h:"},
                                                           {"--world-size", ""},
                                                           {"--rank", "99999999999999999999"},
                                                           {"--launcher", "abc:1"},
                                                           {"--launcher", "-5"},
                                                           {"--launcher", ":7"}};
    for (const auto& [flag, value] : hostile) {
        std::vector<std::string> words{flag};
        if (value) words.emplace_back(value);
        std::size_t k = 0;
        RankAddress d;
        EXPECT_THROW(take_rank_argument(words, k, d), InputError)
            << flag << " " << (value ? value : "");
    }
    RankAddress outside;
    outside.rank = 2;
    outside.world_size = 2;
    outside.store_port = 1;
    EXPECT_THROW(check_rank_address(outside), InputError);
    RankAddress no_store;
    no_store.world_size = 2;
    EXPECT_THROW(check_rank_address(no_store), InputError);
}

TEST(RankPlan, ShardRangesAreEvenDisjointAndCoverTheGlobalBatch) {
    for (int world = 1; world <= 5; ++world) {
        for (std::int64_t length = 0; length <= 11; ++length) {
            std::int64_t next = 100;
            for (int r = 0; r < world; ++r) {
                const auto s = shard_range(100, 100 + length, r, world);
                EXPECT_EQ(s.begin, next);
                EXPECT_LE(s.end - s.begin, length / world + 1);
                EXPECT_GE(s.end - s.begin, length / world);
                next = s.end;
            }
            EXPECT_EQ(next, 100 + length);
        }
    }
}

}  // namespace
}  // namespace crucible
