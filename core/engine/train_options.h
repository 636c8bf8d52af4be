#pragma once
// The engine's own options (epochs, batch, schedule, optimizer, checkpoints, run folder). Every
// task schema includes them through add_training_options(), with task-specific defaults; the
// engine reads them back from the resolved config with TrainOptions::from_config().
#include <cstdint>
#include <string>

#include "core/base/json.h"
#include "core/base/options_schema.h"

namespace crucible::engine {

struct TrainDefaults {
    int epochs = 100;
    int batch = 16;
    double lr0 = 0.01;
    double lrf = 0.01;
    double momentum = 0.937;
    double weight_decay = 5e-4;
    double warmup_epochs = 3.0;
    double warmup_momentum = 0.8;
    double warmup_bias_lr = 0.1;
    int nbs = 64;
    int patience = 100;
    std::string optimizer = "auto";
    double grad_clip = 10.0;
    int checkpoint_steps = 500;
    bool cos_lr = false;
    bool ema = true;
    bool amp = true;
};

void add_training_options(OptionSchema& schema, const TrainDefaults& defaults = {});

struct TrainOptions {
    int epochs = 100;
    int batch = 16;
    double lr0 = 0.01, lrf = 0.01, momentum = 0.937, weight_decay = 5e-4;
    double warmup_epochs = 3, warmup_momentum = 0.8, warmup_bias_lr = 0.1;
    int nbs = 64;
    int patience = 100;
    std::string optimizer = "auto";
    bool cos_lr = false;
    double grad_clip = 10.0;
    bool amp = true;
    std::string amp_dtype = "fp16";  // fp16 | bf16
    bool deterministic = false;      // configure_algorithms()
    std::int64_t seed = 0;
    std::string device;
    int workers = 0;  // CPU threads for LibTorch (0: all cores)
    int ranks = 1;    // data-parallel processes (core/base/rank_plan.h)
    int dist_timeout_s = 1800;
    std::string dist_backend = "auto";  // GPU tensors between ranks: auto | nccl | gloo
    int save_period = -1;
    int checkpoint_steps = 500;  // also at every epoch end
    int keep_checkpoints = 3;
    int log_steps = 10;  // metric/progress events every N steps
    bool ema = true;
    std::string weights;  // start from these weights (safetensors)
    std::string project, name;
    bool exist_ok = false;
    bool val = true;

    static TrainOptions from_config(const Json& resolved);
};

// Options that say where a run goes, not how it trains: left out of the config hash.
bool is_location_option(const std::string& name);

}  // namespace crucible::engine
