#pragma once
// Learning rates of their own for sets of LoRA adapters (kohya's unet_lr / text_encoder_lr) on
// the engine's optimizer, which runs one learning-rate schedule for all its parameter groups
// (its three groups are weight-decay classes, core/engine/param_groups.h).
//
// For given gradients and optimizer state, an SGD, Adam or AdamW step is linear in the learning
// rate, weight decay included, and the optimizer's moment buffers do not depend on it. So a
// parameter whose learning rate is r times the optimizer's is stepped with the optimizer's, and
// its change is then scaled: p = before + r·(p − before). Parameters and optimizer state are
// those of a step with lr·r, up to float rounding (the change is taken as a difference of floats).
// Gradient clipping acts before the step, on all parameters together, as in kohya.
//
// The task is called before a step, not after it, so the scaling is settled late: begin_step()
// (in every compute_loss, just before its forward pass) settles the previous step and remembers
// the values; settle() runs before anything else reads the adapters (validation, samples,
// export), never between begin_step() and the step, which would leave that step unscaled. The
// remembered values and a `pending` flag are buffers, so a checkpoint written between a step and
// its settling resumes exactly, and a weights file written then can still be settled. An EMA
// would average unsettled values; the task refuses EMA when a ratio is not 1.
#include <torch/torch.h>

#include <string>
#include <utility>
#include <vector>

namespace crucible::sd {

struct LrScaleImpl : torch::nn::Module {
    // (name, parameter, ratio) for every parameter whose learning rate differs from the
    // optimizer's; the buffers are named after the parameters ('.' becomes '_').
    struct Entry {
        std::string name;
        torch::Tensor param;
        double ratio = 1;
    };
    explicit LrScaleImpl(const std::vector<Entry>& entries);
    // Settles the last step and marks the next one as pending: the values it starts from are
    // remembered already (settle() leaves them equal to the parameters, as construction does).
    void begin_step();
    // Scales the change since begin_step() by each parameter's ratio and remembers the result
    // (once; a second call, or a call without a step in between, changes nothing).
    void settle();
    std::size_t size() const { return params_.size(); }

  private:
    std::vector<torch::Tensor> params_, before_;  // before_ == params_ unless pending
    std::vector<double> ratios_;
    torch::Tensor pending_;  // 0-d, 1 between begin_step() and settle()
};
TORCH_MODULE(LrScale);

}  // namespace crucible::sd
