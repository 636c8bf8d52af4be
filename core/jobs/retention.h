#pragma once
// The agent's retention policy (DESIGN.md "Jobs and reliability"): old intermediate
// checkpoints of ended jobs, blobs that no dataset or job input references, and the job inputs
// (`<data>/inputs/<sha256>/<name>`, uploaded model files) of jobs that ended long ago are
// removed, so a long-lived GPU server does not fill its disk. `best` and `last` weights and
// everything a queued, running, paused or interrupted job may start or resume from are never
// touched.
#include <chrono>
#include <cstdint>
#include <filesystem>

#include "core/jobs/job_registry.h"

namespace crucible::jobs {

struct RetentionPolicy {
    std::chrono::hours keep_checkpoints_of_ended_jobs{24 * 7};  // then keep only best/last
    std::chrono::hours keep_unreferenced_blobs{24 * 3};
    std::chrono::hours keep_stalled_uploads{24 * 3};  // partial uploads nobody continued
};

struct RetentionReport {
    std::uint64_t checkpoint_files_removed = 0;
    std::uint64_t blobs_removed = 0;
    std::uint64_t partial_uploads_removed = 0;
    std::uint64_t inputs_removed = 0;  // <data>/inputs/<sha256> folders
    std::uint64_t bytes_freed = 0;
};

// `inputs_dir` may be empty (no job inputs on this agent). An inputs folder stays while any job
// naming it in its options is not final or ended within keep_checkpoints_of_ended_jobs, and
// while it is younger than keep_unreferenced_blobs (a submit may be creating it right now); its
// blob counts as referenced while the folder stays.
RetentionReport apply_retention(const JobRegistry& registry, const std::filesystem::path& blobs_dir,
                                const std::filesystem::path& datasets_dir,
                                const RetentionPolicy& policy, double now_unix,
                                const std::filesystem::path& inputs_dir = {});

}  // namespace crucible::jobs
