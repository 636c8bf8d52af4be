#pragma once
// Builds the optimizer with one optimizer group per parameter group, in the task's order, each
// with the scaled weight decay or none (param_groups.h), and sets a group's learning rate and SGD
// momentum / Adam beta1.
#include <torch/torch.h>

#include <memory>

#include "core/engine/param_groups.h"
#include "core/engine/schedule.h"

namespace crucible::engine {

// `weight_decay` is the scaled decay, for the groups with WeightDecay::Scaled. A group starts at
// choice.lr · lr_factor (the schedule sets it again before every step).
std::unique_ptr<torch::optim::Optimizer> make_optimizer(const OptimizerChoice& choice,
                                                        const ParamGroups& groups,
                                                        double weight_decay);

void set_group_lr(torch::optim::Optimizer& optimizer, std::size_t group, double lr);
// SGD momentum; ignored for Adam/AdamW (their betas are not ramped).
void set_group_momentum(torch::optim::Optimizer& optimizer, std::size_t group, double momentum);
double group_lr(torch::optim::Optimizer& optimizer, std::size_t group);

}  // namespace crucible::engine
