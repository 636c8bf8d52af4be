#pragma once
// Task plugins (DESIGN.md "Task plugins"): the engine owns the generic loop; a task supplies its
// option schema, data, model, loss, validation and artifacts through these hooks. Tasks register
// by id (`detect.yolo`, `llm.lora`, `diffusion.sd_lora`) in the TaskRegistry.
#include <torch/torch.h>

#include <any>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/base/event.h"
#include "core/base/json.h"
#include "core/base/options_schema.h"
#include "core/engine/memory_estimate.h"
#include "core/engine/param_groups.h"

namespace crucible::engine {

class Collective;  // distributed.h

// One batch as the task's loader produced it. The engine only needs the item count (for img/s
// and the out-of-memory message); the payload is the task's own type.
struct Batch {
    std::int64_t size = 0;
    std::any data;
    // Items of the global batch this one is a rank's slice of (set by the trainer before
    // compute_loss; equal to `size` in a single process).
    std::int64_t global_size = 0;
};

// Training batches of one epoch. The order depends only on (seed, epoch), so a run resumed at
// (epoch, index) sees exactly the batches the uninterrupted run saw.
class BatchSource {
  public:
    virtual ~BatchSource() = default;
    virtual std::int64_t batches_per_epoch() const = 0;
    virtual std::int64_t items_per_epoch() const = 0;  // images / samples, for optimizer=auto
    // Positions the source at batch `index` of `epoch` (0-based both).
    virtual void start_epoch(int epoch, std::int64_t index) = 0;
    // The next batch of the epoch, or nullopt at its end.
    virtual std::optional<Batch> next() = 0;
};

struct LossOutput {
    torch::Tensor total;  // scalar that backward() sees
    torch::Tensor items;  // 1-D, detached, one value per Task::loss_names() entry
    // What `total` is the mean of (tokens with a label, for a language model), when that is not
    // the batch's items. A data-parallel rank's gradient counts by its share of the global
    // batch's count, so the ranks together get one process's gradient. 0: the items.
    double count = 0;
    // The least the global count is taken to be (a loss that divides by max(count, 1) says 1,
    // and divides by its own count unclamped in a distributed run).
    double count_floor = 0;
};

struct EvalResult {
    // Values in the order of Task::eval_columns() (metrics, then val losses), by name.
    std::vector<std::pair<std::string, double>> values;
    Json per_class = nullptr;  // rows {class, images, instances, p, r, map50, map50_95} or null
    double fitness = 0;        // higher is better; decides `best` and early stopping
};

// What the engine hands to a task when the run starts.
struct TaskContext {
    Json config;  // resolved against the task's schema
    torch::Device device{torch::kCPU};
    std::filesystem::path run_dir;
    std::filesystem::path artifacts_dir;
    std::int64_t seed = 0;
    int workers = 0;
    // Data-parallel runs: this process is rank `rank` of `world_size`. Its training batches are
    // its even slice of each global batch of `batch` items (the same global order and
    // augmentations whatever the world size); rank 0 alone validates and writes files.
    int rank = 0;
    int world_size = 1;
    // The link to the other ranks (null in a single process), for a task's own collectives
    // (SyncBatchNorm); valid for the whole run.
    Collective* collective = nullptr;
    std::function<void(const std::string& level, const std::string& message)> log;
    // Events of the task's own (DESIGN.md `sample`, `artifact`), written in order with the
    // trainer's; the trainer adds the current step when the event has none. Call it from the
    // task's hooks (the trainer's thread) only.
    std::function<void(Event event)> emit;
};

class Task {
  public:
    virtual ~Task() = default;

    // Options of this task, including the engine's training options (add_training_options).
    // Must be cheap: `crucible-worker describe` builds every task to ask.
    virtual OptionSchema schema() const = 0;

    // Reads the task's options, loads / checks the data. Called once per run, before any other
    // hook.
    virtual void setup(const TaskContext& context) = 0;

    virtual std::unique_ptr<BatchSource> train_data() = 0;

    // A fresh model on the context's device. Called twice (model and its EMA copy); must build the
    // same architecture each time. Parameters with requires_grad false are not optimized.
    virtual std::shared_ptr<torch::nn::Module> build_model() = 0;

    // Names of the loss items, e.g. {"box_loss", "cls_loss", "dfl_loss"} (written as train/<name>).
    virtual std::vector<std::string> loss_names() const = 0;
    virtual LossOutput compute_loss(torch::nn::Module& model, const Batch& batch) = 0;

    // Column names validate() returns, in results.csv order.
    virtual std::vector<std::string> eval_columns() const = 0;
    virtual EvalResult validate(torch::nn::Module& model) = 0;
    // True when every rank of a data-parallel run calls validate(), each on its share of the
    // validation set, and rank 0's result covers all of it (the task gathers through
    // TaskContext::collective). False: rank 0 validates alone while the others wait.
    virtual bool validates_in_shards() const { return false; }

    // The optimizer's parameter groups of `model` (param_groups.h): name, parameters, weight
    // decay, learning-rate factor and warm-up of each. The engine runs any number of them and
    // names their learning rates `lr/<name>`. The default is the YOLO split pg0 / pg1 / pg2, by
    // name and module type. Called once per run, on the trained model (not its EMA copy).
    virtual ParamGroups parameter_groups(torch::nn::Module& model) {
        return default_parameter_split(model);
    }

    // Class count for the optimizer=auto rule (0 when the task has no classes).
    virtual int num_classes() const { return 0; }
    // Called before each epoch (e.g. to switch mosaic off for the last epochs).
    virtual void on_epoch_start(int /*epoch*/, int /*epochs*/) {}
    // The predicted peak device memory of training with `options` (resolved) on a device of
    // `device_type` (kCUDA plans for a GPU even where none is present), or nullopt when the task
    // makes no prediction. Reads what it needs (a model's config.json), never the data, and
    // allocates nothing: `crucible train ... dry_run=true` and the studio ask it before a run.
    virtual std::optional<MemoryEstimate> estimate_memory(const Json& /*options*/,
                                                          torch::DeviceType /*device_type*/) const {
        return std::nullopt;
    }
    // True when build_model restores every frozen parameter from its own source (a base model
    // read from disk, frozen under LoRA adapters): weights files, checkpoints and the first
    // broadcast to other ranks then carry only the trainable parameters and the buffers (a LoRA
    // run of an 8B model writes megabytes, not its 16 GB base, at every checkpoint).
    virtual bool rebuilds_frozen_weights() const { return false; }
    // Extra metadata for the weight files (class names, ...), string values.
    virtual Json weights_metadata() const { return Json::object(); }
    // SHA-256 of the dataset manifest, for provenance; empty when unknown.
    virtual std::string dataset_hash() const { return ""; }
    // Task-specific exports after training (plots, ONNX, ...), given the final weights.
    virtual void save_artifacts(torch::nn::Module& /*best_model*/,
                                const std::filesystem::path& /*dir*/) {}
};

struct TaskInfo {
    std::string id;                    // "detect.yolo"
    std::string title;                 // "YOLOv8 object detection"
    std::vector<std::string> aliases;  // {"detect"}
    std::string folder;                // runs/<folder>/<name>: "detect"
    std::function<std::unique_ptr<Task>()> make;
    // The kind of project dataset it trains on (store DatasetInfo::kind: "detection", "chat"),
    // "captions" for caption folders, "" for none: the studio's dataset picker offers only those.
    std::string dataset_kind;
};

class TaskRegistry {
  public:
    static TaskRegistry& instance();
    void add(TaskInfo info);  // a second task with the same id or alias is an Error
    // By id or alias; nullptr when unknown.
    const TaskInfo* find(const std::string& id_or_alias) const;
    // Throws InputError("task", ...) listing the known ids when unknown.
    const TaskInfo& get(const std::string& id_or_alias) const;
    std::vector<const TaskInfo*> all() const;  // sorted by id

  private:
    std::vector<std::unique_ptr<TaskInfo>> tasks_;
};

// Static registration: `static RegisterTask reg{{"detect.yolo", ...}};` in the plugin. Plugin
// static libraries are linked whole-archive into the executables so these objects are kept.
struct RegisterTask {
    explicit RegisterTask(TaskInfo info);
};

// {"version":..., "tasks":[schema JSON, ...]} for `crucible-worker describe`.
Json describe_tasks();
// What this process's LibTorch and CUDA see: {"libtorch", "cuda_runtime" ("13.0" or "none"),
// "cuda_devices": [UUID, ...]} (`crucible-worker devices`, for `crucible-agent setup`).
Json describe_devices();

}  // namespace crucible::engine
