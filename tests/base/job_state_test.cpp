// Job states and log levels have one spelling each (core/base), and the worker's exit codes
// map both ways onto the states it ends in.
#include "core/base/job_state.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "core/base/error.h"
#include "core/base/log.h"

namespace crucible {
namespace {

constexpr JobState kStates[] = {JobState::Queued,     JobState::Running, JobState::Paused,
                                JobState::Succeeded,  JobState::Failed,  JobState::Canceled,
                                JobState::Interrupted};

TEST(JobState, EveryStateHasOneNameThatParsesBack) {
    std::set<std::string> names;
    for (const JobState s : kStates) {
        names.insert(job_state_name(s));
        EXPECT_EQ(parse_job_state(job_state_name(s)), s);
        EXPECT_EQ(try_parse_job_state(job_state_name(s)), s);
    }
    EXPECT_EQ(names.size(), std::size(kStates));
    EXPECT_EQ(std::string(job_state_name(JobState::Canceled)), "canceled");
    for (const std::string bad : {"", "Succeeded", "cancelled", "done", "running "}) {
        EXPECT_FALSE(try_parse_job_state(bad)) << bad;
        EXPECT_THROW(parse_job_state(bad), InputError) << bad;
    }
}

TEST(JobState, OnlySucceededFailedAndCanceledAreFinal) {
    std::set<JobState> final_states;
    for (const JobState s : kStates)
        if (is_final_state(s)) final_states.insert(s);
    EXPECT_EQ(final_states,
              (std::set<JobState>{JobState::Succeeded, JobState::Failed, JobState::Canceled}));
}

TEST(JobState, WorkerExitCodesMapBothWays) {
    EXPECT_EQ(worker_exit_code(JobState::Succeeded), 0);
    EXPECT_EQ(worker_exit_code(JobState::Failed), 1);
    EXPECT_EQ(worker_exit_code(JobState::Paused), 3);
    EXPECT_EQ(worker_exit_code(JobState::Canceled), 4);
    EXPECT_EQ(worker_exit_code(JobState::Interrupted), 5);
    for (const JobState s : {JobState::Succeeded, JobState::Failed, JobState::Paused,
                             JobState::Canceled, JobState::Interrupted})
        EXPECT_EQ(state_of_exit_code(worker_exit_code(s)), s);
    // Not a way to end: the failure code.
    EXPECT_EQ(worker_exit_code(JobState::Running), 1);
    EXPECT_EQ(worker_exit_code(JobState::Queued), 1);
    for (const int crash : {2, 6, 127, 134, 137, -1})
        EXPECT_FALSE(state_of_exit_code(crash)) << crash;
}

TEST(LogLevel, OneSpellingAndTheOldOnesAccepted) {
    for (const LogLevel l : {LogLevel::Debug, LogLevel::Info, LogLevel::Warning, LogLevel::Error})
        EXPECT_EQ(parse_log_level(log_level_name(l)), l);
    EXPECT_EQ(std::string(log_level_name(LogLevel::Warning)), "warning");
    EXPECT_EQ(parse_log_level("warn"), LogLevel::Warning);
    EXPECT_EQ(parse_log_level("trace"), LogLevel::Debug);
    EXPECT_FALSE(parse_log_level("WARNING"));
    EXPECT_FALSE(parse_log_level(""));
}

TEST(LogNumber, SettingsReadAsAPersonWritesThem) {
    EXPECT_EQ(log_number(0.00125), "0.00125");
    EXPECT_EQ(log_number(0.9), "0.9");
    EXPECT_EQ(log_number(0.0), "0");
    EXPECT_EQ(log_number(0.0005), "0.0005");
    EXPECT_EQ(log_number(1e-8), "1e-08");
    EXPECT_EQ(log_number(640), "640");
    EXPECT_EQ(log_number(1.0 / 3), "0.333333");
    EXPECT_EQ(log_number(-2.5), "-2.5");
}

}  // namespace
}  // namespace crucible
