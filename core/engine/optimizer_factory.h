#pragma once
// Builds the optimizer with the three parameter groups in the reference order (pg0 biases without
// decay, pg1 weights with the scaled decay, pg2 norm weights without decay), and sets a group's
// learning rate and SGD momentum / Adam beta1.
#include <torch/torch.h>

#include <memory>

#include "core/engine/param_groups.h"
#include "core/engine/schedule.h"

namespace crucible::engine {

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const OptimizerChoice& choice,
                                                        const ParamGroups& groups,
                                                        double weight_decay);

void set_group_lr(torch::optim::Optimizer& optimizer, std::size_t group, double lr);
// SGD momentum; ignored for Adam/AdamW (their betas are not ramped).
void set_group_momentum(torch::optim::Optimizer& optimizer, std::size_t group, double momentum);
double group_lr(torch::optim::Optimizer& optimizer, std::size_t group);

}  // namespace crucible::engine
