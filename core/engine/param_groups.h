#pragma once
// The three optimizer parameter groups of SPECS.md "YOLOv8": pg0 biases (no weight decay), pg1
// conv/linear weights (decay scaled by batch·accumulate/nbs), pg2 normalization weights (no decay).
#include <torch/torch.h>

#include <string>
#include <vector>

namespace crucible::engine {

struct ParamGroups {
    std::vector<torch::Tensor> biases;        // pg0
    std::vector<torch::Tensor> weights;       // pg1, decayed
    std::vector<torch::Tensor> norm_weights;  // pg2
    std::vector<std::string> bias_names, weight_names, norm_names;
    std::size_t size() const { return biases.size() + weights.size() + norm_weights.size(); }
};

// Default rule: every trainable parameter of a normalization module (BatchNorm, GroupNorm,
// LayerNorm, InstanceNorm, or any module whose type name ends in "Norm") goes to pg2 when its
// name ends in "weight"; a parameter whose name ends in "bias" goes to pg0; everything else
// (conv/linear weights, embeddings) to pg1. Frozen parameters (requires_grad false) are left out.
ParamGroups default_parameter_split(torch::nn::Module& model);

}  // namespace crucible::engine
