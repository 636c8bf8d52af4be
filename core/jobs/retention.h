#pragma once
// The agent's retention policy (DESIGN.md "Jobs and reliability"): old intermediate
// checkpoints of ended jobs and blobs that no dataset references are removed, so a long-lived
// GPU server does not fill its disk. `best` and `last` weights and everything a running,
// paused or interrupted job may resume from are never touched.
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
    std::uint64_t bytes_freed = 0;
};

RetentionReport apply_retention(const JobRegistry& registry, const std::filesystem::path& blobs_dir,
                                const std::filesystem::path& datasets_dir,
                                const RetentionPolicy& policy, double now_unix);

}  // namespace crucible::jobs
