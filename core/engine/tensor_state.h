#pragma once
// Byte images of training state for checkpoints, through LibTorch's own archives
// (torch::serialize::OutputArchive / InputArchive): module parameters
// and buffers, optimizer state (momentum buffers, Adam moments and step counts), pending
// gradients, and the random generators.
#include <torch/torch.h>

#include <string>
#include <utility>
#include <vector>

namespace crucible::engine {

// Which of a module's tensors a weights file, a checkpoint or a broadcast carries: all of them,
// or only the parameters that train plus every buffer (for tasks whose frozen parameters are
// rebuilt from their own source: Task::rebuilds_frozen_weights).
enum class ModuleState { All, Trainable };
// The selected (name, tensor) pairs, parameters first, in the module's order.
std::vector<std::pair<std::string, torch::Tensor>> module_state(torch::nn::Module& module,
                                                                ModuleState which);

std::string module_to_bytes(torch::nn::Module& module, ModuleState which = ModuleState::All);
// Values are copied into the module's existing tensors (the optimizer keeps its references).
void module_from_bytes(torch::nn::Module& module, const std::string& bytes,
                       ModuleState which = ModuleState::All);

std::string optimizer_to_bytes(torch::optim::Optimizer& optimizer);
// The state is placed on the device of the optimizer's parameters.
void optimizer_from_bytes(torch::optim::Optimizer& optimizer, const std::string& bytes);

// Gradients of the module's parameters (those defined), for checkpoints taken in the middle of
// an accumulation window.
std::string grads_to_bytes(torch::nn::Module& module);
void grads_from_bytes(torch::nn::Module& module, const std::string& bytes);

// The default CPU generator's state, and each CUDA device's when CUDA is present.
std::string rng_to_bytes();
void rng_from_bytes(const std::string& bytes);

}  // namespace crucible::engine
