#pragma once
// The layout of a job folder, the one place where its files are named (DESIGN.md "Jobs and
// reliability"). The worker and `crucible train` (core/engine), the agent (core/jobs), the CLI
// and the studio reach a job's files through JobFolder; tests/layers fails when another product
// file spells one of these names.
//
//   spec.json      the task and its options (written by whoever creates the job)
//   events.jsonl   the event log; one writer, the worker (the agent's events wait in inbox/)
//   control.json   a stop request while it waits (job_control.h)
//   inbox/         events the agent posts for the worker to append (event_inbox.h)
//   job.json       the agent's record of the job (state, GPUs, process)
//   mirror.json    the agent's record of what its checkpoint mirror has uploaded
//   mesh.ready     a run over several servers: the launcher has reached the other servers' ranks
//   worker.log     the worker's log, and its stdout/stderr under the agent
//   results.csv    one row per epoch
//   checkpoints/   step checkpoints, step-<step, 12 digits>.ckpt
//   artifacts/     what the run made: weights/{last,best}.safetensors and the task's outputs
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace crucible {

// Artifact names shared between a task and the studio, relative to artifacts/ (as the agent's
// artifact routes take them).
inline constexpr const char* kValidationReportArtifact = "val_metrics.json";

struct JobFolder {
    std::filesystem::path dir;

    std::filesystem::path spec() const { return dir / "spec.json"; }
    std::filesystem::path events() const { return dir / "events.jsonl"; }
    std::filesystem::path control() const { return dir / "control.json"; }
    std::filesystem::path inbox() const { return dir / "inbox"; }
    std::filesystem::path record() const { return dir / "job.json"; }
    std::filesystem::path mirror_state() const { return dir / "mirror.json"; }
    // Written by the launcher of a share of a run over several servers once its proxies to the
    // other servers' ranks are up; its ranks wait for it before Gloo connects.
    std::filesystem::path mesh_ready() const { return dir / "mesh.ready"; }
    std::filesystem::path worker_log() const { return dir / "worker.log"; }
    // The log of rank `rank` (> 0) of a data-parallel run; rank 0 logs to worker_log().
    std::filesystem::path rank_log(int rank) const {
        return dir / ("worker.rank" + std::to_string(rank) + ".log");
    }
    std::filesystem::path results_csv() const { return dir / "results.csv"; }
    std::filesystem::path checkpoints() const { return dir / "checkpoints"; }
    std::filesystem::path artifacts() const { return dir / "artifacts"; }
    std::filesystem::path weights() const { return artifacts() / "weights"; }
    std::filesystem::path validation_report() const {
        return artifacts() / kValidationReportArtifact;
    }

    // The file name of the checkpoint at `step` in checkpoints/ ("step-000000000042.ckpt"),
    // and back (nullopt for any other name: temp files, best.ckpt).
    static std::string step_checkpoint_name(std::int64_t step);
    static std::optional<std::int64_t> step_of_checkpoint(const std::string& file_name);

    // Creates the folder with checkpoints/ and artifacts/weights/.
    void create() const;

    // True for a file (relative to the folder) that is bookkeeping of the agent and the worker,
    // not a result: job.json, control.json, mirror.json, mesh.ready, inbox/ and files being
    // written (*.tmp*). Clients
    // may download everything else.
    static bool is_bookkeeping(const std::filesystem::path& relative);
};

}  // namespace crucible
