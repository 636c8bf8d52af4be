#include "core/base/job_state.h"

#include "core/base/error.h"

namespace crucible {

namespace {

constexpr JobState kAll[] = {JobState::Queued,     JobState::Running, JobState::Paused,
                             JobState::Succeeded,  JobState::Failed,  JobState::Canceled,
                             JobState::Interrupted};

}  // namespace

const char* job_state_name(JobState state) {
    switch (state) {
        case JobState::Queued:
            return "queued";
        case JobState::Running:
            return "running";
        case JobState::Paused:
            return "paused";
        case JobState::Succeeded:
            return "succeeded";
        case JobState::Failed:
            return "failed";
        case JobState::Canceled:
            return "canceled";
        case JobState::Interrupted:
            return "interrupted";
    }
    return "failed";
}

std::optional<JobState> try_parse_job_state(std::string_view text) {
    for (const JobState s : kAll)
        if (text == job_state_name(s)) return s;
    return std::nullopt;
}

JobState parse_job_state(const std::string& text) {
    if (auto s = try_parse_job_state(text)) return *s;
    throw InputError("state", "unknown job state '" + text + "'");
}

bool is_final_state(JobState state) {
    return state == JobState::Succeeded || state == JobState::Failed || state == JobState::Canceled;
}

bool can_cancel(JobState state) {
    return !is_final_state(state);
}

bool can_pause(JobState state) {
    return state == JobState::Queued || state == JobState::Running ||
           state == JobState::Interrupted;
}

bool can_resume(JobState state) {
    return state == JobState::Paused || state == JobState::Interrupted;
}

int worker_exit_code(JobState state) {
    switch (state) {
        case JobState::Succeeded:
            return 0;
        case JobState::Paused:
            return 3;
        case JobState::Canceled:
            return 4;
        case JobState::Interrupted:
            return 5;
        case JobState::Queued:
        case JobState::Running:
        case JobState::Failed:
            break;
    }
    return 1;
}

std::optional<JobState> state_of_exit_code(int code) {
    for (const JobState s : {JobState::Succeeded, JobState::Failed, JobState::Paused,
                             JobState::Canceled, JobState::Interrupted})
        if (worker_exit_code(s) == code) return s;
    return std::nullopt;
}

}  // namespace crucible
