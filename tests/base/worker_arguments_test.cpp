// crucible-worker's command line: what the scheduler and the rank launcher write reads back, and
// hostile lines are refused naming the argument (core/base/worker_arguments.h).
#include "core/base/worker_arguments.h"

#include <gtest/gtest.h>

#include "core/base/error.h"

namespace crucible {
namespace {

TEST(WorkerArguments, WhatALauncherWritesReadsBack) {
    std::vector<std::string> args = worker_job_arguments("/data/jobs/j1", true);
    const RankAddress rank{
        1, 2, std::string("127.0.0.1"), 29500, std::string("cpu"), 77, std::string("9")};
    for (auto& a : rank_arguments(rank))
        args.push_back(std::move(a));
    const WorkerArguments parsed = parse_worker_arguments(args);
    EXPECT_EQ(parsed.job, std::filesystem::path("/data/jobs/j1"));
    EXPECT_TRUE(parsed.resume);
    EXPECT_EQ(parsed.rank.rank, 1);
    EXPECT_EQ(parsed.rank.world_size, 2);
    EXPECT_EQ(parsed.rank.launcher_pid, 77);
    EXPECT_FALSE(parse_worker_arguments(worker_job_arguments("j", false)).resume);
}

TEST(WorkerArguments, HostileLinesAreRefusedNamingTheArgument) {
    const struct {
        std::vector<std::string> args;
        const char* names;
    } cases[] = {
        {{}, "--job"},
        {{"--resume"}, "--job"},
        {{"--job"}, "--job"},
        {{"--job", "j", "--bogus"}, "--bogus"},
        {{"--job", "j", "--rank", "3", "--world-size", "2", "--store", "h:1"}, "--rank"},
        {{"--job", "j", "--world-size", "2"}, "--store"},
    };
    for (const auto& c : cases) {
        try {
            parse_worker_arguments(c.args);
            ADD_FAILURE() << c.names << " case was accepted";
        } catch (const InputError& e) {
            EXPECT_EQ(e.where(), c.names) << e.what();
        }
    }
}

}  // namespace
}  // namespace crucible
