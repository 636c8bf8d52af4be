#pragma once
// Run and job folders. `crucible train` puts a run in runs/<task>/<name> under the current
// folder (project= and name= override; train, train2, train3, ... rather than overwriting, as
// users of the yolo CLI expect). Every run folder is a job folder (DESIGN.md "Jobs and
// reliability"): spec.json, events.jsonl, checkpoints/, artifacts/, worker.log, plus results.csv
// and artifacts/weights/{best,last}.safetensors.
#include <filesystem>
#include <string>

namespace crucible::engine {

struct RunPaths {
    std::filesystem::path dir;
    std::filesystem::path spec() const { return dir / "spec.json"; }
    std::filesystem::path events() const { return dir / "events.jsonl"; }
    std::filesystem::path checkpoints() const { return dir / "checkpoints"; }
    std::filesystem::path artifacts() const { return dir / "artifacts"; }
    std::filesystem::path weights() const { return dir / "artifacts" / "weights"; }
    std::filesystem::path results_csv() const { return dir / "results.csv"; }
    std::filesystem::path worker_log() const { return dir / "worker.log"; }
    // Creates the folder and its sub-folders.
    void create() const;
};

// Claims a new run folder: <project or base/runs/<task_folder>>/<name or "train">, then name2,
// name3, ... when taken (unless exist_ok). The folder is created (the claim is atomic).
// Throws InputError("name", ...) for a name with path separators or "..".
std::filesystem::path claim_run_folder(const std::filesystem::path& base,
                                       const std::string& task_folder, const std::string& project,
                                       const std::string& name, bool exist_ok);

}  // namespace crucible::engine
