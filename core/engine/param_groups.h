#pragma once
// Optimizer parameter groups as data: a task declares its groups (Task::parameter_groups), and
// the engine builds one optimizer group, one learning-rate schedule entry, one `lr/<name>` metric
// and results.csv column, and one checkpoint entry per group, keyed by its name, for any number of
// them. The default is the split of SPECS.md "YOLOv8": pg0 biases (no weight decay, warm-up from
// warmup_bias_lr), pg1 conv/linear weights (decay scaled by batch·accumulate/nbs), pg2
// normalization weights (no decay). Nothing here knows a task; the names are the task's.
#include <torch/torch.h>

#include <string>
#include <vector>

#include "core/engine/schedule.h"

namespace crucible::engine {

enum class WeightDecay {
    None,    // never decayed (biases, normalization weights)
    Scaled,  // weight_decay · batch · accumulate / nbs (scaled_weight_decay, schedule.h)
};

struct ParamGroup {
    // Letters, digits, '_', '-' and '.': it becomes the metric `lr/<name>`, a results.csv column
    // and the key of the group's optimizer state in checkpoints. Unique within a task.
    std::string name;
    std::vector<torch::Tensor> params;
    std::vector<std::string> param_names;  // one per parameter, for messages
    WeightDecay decay = WeightDecay::Scaled;
    // The group's learning rate over the run's (lr0, or what optimizer=auto picked); the
    // schedule's factor and warm-up apply on top. 1 gives exactly the run's learning rate.
    double lr_factor = 1.0;
    Warmup warmup = Warmup::Ramp;

    void add(std::string param_name, torch::Tensor param) {
        param_names.push_back(std::move(param_name));
        params.push_back(std::move(param));
    }
};

using ParamGroups = std::vector<ParamGroup>;

// Parameters of all groups together.
std::size_t parameter_count(const ParamGroups& groups);
// Every parameter of every group, in group order (the order clipping and checkpoints see them).
std::vector<torch::Tensor> all_parameters(const ParamGroups& groups);
std::vector<std::string> group_names(const ParamGroups& groups);

// Throws Error when a name is empty, repeated or has other characters, a learning-rate factor is
// negative or not finite, a tensor sits in two groups (or twice in one), or there are no groups.
void check_param_groups(const ParamGroups& groups);

// Default rule: every trainable parameter of a normalization module (BatchNorm, GroupNorm,
// LayerNorm, InstanceNorm, or any module whose type name ends in "Norm") goes to pg2 when its
// name ends in "weight"; a parameter whose name ends in "bias" goes to pg0; everything else
// (conv/linear weights, embeddings) to pg1. Frozen parameters (requires_grad false) are left out.
// The three groups are returned in that order even when one is empty (results.csv keeps the
// Ultralytics columns lr/pg0, lr/pg1, lr/pg2).
ParamGroups default_parameter_split(torch::nn::Module& model);

// One group `name` of every trainable parameter of `model`, in module order (a LoRA whose
// adapters are all decayed alike), with scaled decay, factor 1 and a ramp warm-up.
ParamGroup trainable_parameters(torch::nn::Module& model, std::string name);

}  // namespace crucible::engine
