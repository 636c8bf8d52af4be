#pragma once
// A finished run's files kept beside the project (store::run_files_folder): fetched from the
// run's agent once it ends (weights, validation report, samples, results.csv; not the resume
// checkpoints), each download resumed and retried, so the run opens complete offline and its
// weights can be saved anywhere. Blocking calls: run them with run_in_background.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "ui/run_source.h"

namespace crucible::ui {

struct FetchedRunFiles {
    int fetched = 0, kept = 0;        // downloaded now / there already with the same size
    std::uint64_t bytes = 0;          // downloaded now
    std::vector<std::string> failed;  // "path: why", after every try
};

// The file that says a folder holds a run's files completely (written last).
inline constexpr const char* kRunFilesComplete = "fetched.json";

// Copies the files of the job at `place` (an agent's job) into `dest`, keeping their paths;
// `tries` attempts per file, `pause` between them (doubling). Writes kRunFilesComplete when
// nothing failed.
FetchedRunFiles fetch_run_files(const RunPlace& place, const std::filesystem::path& dest,
                                int tries = 3,
                                std::chrono::milliseconds pause = std::chrono::seconds(1));
// Whether `dest` holds a run's files completely.
bool has_run_files(const std::filesystem::path& dest);
// The run's weights among its files: *.safetensors first, then *.pt, best before last.
std::vector<std::filesystem::path> run_weight_files(const std::filesystem::path& dest);

}  // namespace crucible::ui
