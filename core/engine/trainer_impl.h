#pragma once
// Internal state of the Trainer, shared by trainer.cpp (the loop) and trainer_checkpoint.cpp
// (saving and restoring that state). Not part of the engine's interface.
#include <torch/torch.h>

#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/base/event.h"
#include "core/engine/autocast.h"
#include "core/engine/checkpoint_store.h"
#include "core/engine/checkpoint_writer.h"
#include "core/engine/device.h"
#include "core/engine/device_loss_sums.h"
#include "core/engine/distributed.h"
#include "core/engine/ema.h"
#include "core/engine/eta.h"
#include "core/engine/loss_scaler.h"
#include "core/engine/memory_spill.h"
#include "core/engine/results_csv.h"
#include "core/engine/schedule.h"
#include "core/engine/stop_control.h"
#include "core/engine/task.h"
#include "core/engine/tensor_state.h"
#include "core/engine/train_options.h"
#include "core/engine/trainer.h"

namespace crucible::engine {

// Everything that changes while training and must survive a restart.
struct LoopState {
    int epoch = 0;           // current epoch (0-based)
    std::int64_t index = 0;  // batches done in the current epoch
    std::int64_t step = 0;   // batches done in the whole run
    std::int64_t last_opt_step = -1;
    std::vector<double> loss_sum;  // sums of the loss items over the current epoch
    bool has_best = false;
    double best_fitness = 0;
    int best_epoch = -1;
    double elapsed_s = 0;    // training time before this process (results.csv `time`)
    std::vector<double> lr;  // per parameter group, in the task's order
    double momentum = 0;
};

struct Trainer::Impl {
    Impl(Task& task, const TaskInfo& info, Json config, JobFolder paths, EventLogWriter* events,
         RankAddress rank);

    Task& task;
    const TaskInfo& info;
    Json config;
    TrainOptions opt;
    JobFolder paths;
    EventLogWriter* events;  // null on ranks other than 0
    std::string config_sha;
    RankAddress rank;
    std::chrono::steady_clock::time_point launcher_checked;
    bool launcher_lost = false;
    std::unique_ptr<Collective> collective;               // null for a single process
    std::unique_ptr<Collective::GradientSync> grad_sync;  // with `collective`
    // The rank that writes the run's files and events (the only one of a single process).
    bool main_rank() const { return rank.rank == 0; }

    DeviceChoice device;
    AutocastMode amp;
    int threads = 1;
    std::unique_ptr<BatchSource> data;
    std::int64_t nb = 0;
    std::shared_ptr<torch::nn::Module> model;
    std::unique_ptr<ModelEma> ema;
    ParamGroups groups;  // the task's, in its order
    std::vector<std::string> group_names;
    std::vector<torch::Tensor> params;  // every optimized parameter, in group order
    OptimizerChoice choice;
    double weight_decay = 0;
    std::unique_ptr<torch::optim::Optimizer> optimizer;
    ScheduleConfig schedule;
    DynamicLossScaler scaler{false};
    std::vector<std::string> loss_names, eval_columns;
    ResultsTable results;
    CheckpointStore store;
    CheckpointWriter writer;  // after `store`, which it writes to
    StopControl control;
    LoopState s;
    DeviceLossSums loss_sums;  // s.loss_sum as the device has it, read by sync_losses()
    std::int64_t last_checkpoint_step = -1;
    // The step of the last train metric event: the end of an epoch adds its means only when
    // no point was reported at that step already (one point per step on the charts).
    std::int64_t last_reported_step = -1;
    std::deque<std::string> log_tail;
    std::chrono::steady_clock::time_point started;
    std::int64_t window_items = 0;
    std::int64_t window_steps = 0;
    std::chrono::steady_clock::time_point window_start;
    double seconds_per_step = 0;  // over the last logging window (the memory watch's figure)
    EtaEstimate eta_estimate;
    MemorySpillWatch memory_watch;  // GPU memory past the card (Windows spills into RAM)

    // trainer.cpp
    void log(const std::string& level, const std::string& message);
    void emit(Event event);
    void drain_inbox();
    // Rank 0 rewrites results.csv with every row so far; a failed write is a warning.
    void write_results();
    void setup(bool resume);
    // Meets the other ranks (distributed runs only), before the task's setup.
    void connect_ranks();
    // Gives every rank rank 0's parameters and buffers.
    void share_initial_weights();
    // What weights files, checkpoints and the first broadcast carry
    // (Task::rebuilds_frozen_weights).
    ModuleState saved_state() const;
    // The stop request every rank agrees on (rank 0 reads the job folder's; any rank's signal).
    StopRequest agreed_stop_request();
    TrainOutcome loop();
    void train_step(const Batch& batch, std::int64_t i);
    // Items in global batch `i` of the epoch, over all ranks (the batch size of one process).
    std::int64_t global_batch_items(std::int64_t i) const;
    // Reads the loss sums from the device into s.loss_sum (one host read); throws when a step's
    // loss was not finite. Called when the host needs them, never inside a step.
    void sync_losses();
    void optimizer_step();
    void apply_schedule(std::int64_t ni);
    std::string describe_groups() const;  // for the first log line
    void report_step(std::int64_t batch_items);
    TrainOutcome end_epoch(bool& stop);
    TrainOutcome finish(JobState state, const std::string& reason);
    std::map<std::string, std::string> provenance() const;
    void save_weights(const std::string& name);
    torch::nn::Module& eval_model() { return ema ? ema->module() : *model; }
    double elapsed_now() const;

    // trainer_checkpoint.cpp
    std::string encode_state();
    Json lr_by_group() const;  // {"<group>": lr} of s.lr
    void restore_lr(const Json& lr, const std::string& where);
    // results.csv rows of a checkpoint, into `results`; `legacy`: written before parameter groups
    // had names, whose lr/pg0..2 columns may differ from the task's groups now.
    void restore_results(const Json& columns, const Json& rows, bool legacy,
                         const std::string& where);
    void restore_state(const CheckpointData& saved, const std::string& where);
    // Encodes the state of this step and hands it to the background writer (best.ckpt too when
    // `best`); the outcome is reported by report_checkpoints once the write has finished.
    void checkpoint(bool best);
    // Distributed runs: the ranks' gradients accumulated since the last optimizer step, made
    // their mean on every rank (a collective), so the checkpoint holds what all ranks hold.
    void average_accumulated_gradients();
    // Emits the `checkpoint` events (or alarms) of finished background writes.
    void report_checkpoints(const std::vector<CheckpointWriter::Outcome>& outcomes);
    // Restores the newest valid checkpoint; false when there is none.
    bool resume_from_checkpoint();
};

}  // namespace crucible::engine
