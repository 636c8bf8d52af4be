#pragma once
// The optimizer's state in a checkpoint (momentum buffers, Adam moments and step counts), keyed by
// parameter-group name (param_groups.h), so the state of a group follows its name and not its
// position. Options (learning rate, momentum, decay) are not kept: the configuration and the
// schedule set them again before the next step. Reads the layout checkpoints had before groups
// had names too: LibTorch's own archive (optimizer_to_bytes, tensor_state.h).
#include <torch/torch.h>

#include <string>
#include <vector>

namespace crucible::engine {

// `names`: one per optimizer group, in the optimizer's order. SGD, Adam and AdamW.
std::string optimizer_state_to_bytes(torch::optim::Optimizer& optimizer,
                                     const std::vector<std::string>& names);

// Restores what optimizer_state_to_bytes wrote, group by group by name; the groups of the file and
// of `names` must be the same set, each with as many parameters. LibTorch's archive (the older
// layout) names its groups pg0, pg1, ... by position: when those are this run's groups they load
// by name, otherwise the states go to the parameters by position across all groups (both lists in
// group order), which is how a task that now declares its own groups reads a checkpoint of the
// three default ones. Every state must fit its parameter's shape. The state lands on the device of
// the optimizer's parameters. Throws Error when the state does not fit.
void optimizer_state_from_bytes(torch::optim::Optimizer& optimizer,
                                const std::vector<std::string>& names, const std::string& bytes);

}  // namespace crucible::engine
