#pragma once
// Dynamic loss scaling for fp16 training (LibTorch has no C++ GradScaler): the loss is
// multiplied by `scale` before backward; before the optimizer step the gradients are divided by
// it and checked, all in one fused kernel, with one host read of the result per step (not one
// per parameter); a non-finite gradient skips the step and halves the scale; after
// `growth_interval` good steps in a row the scale doubles. Disabled, it is the identity.
#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "core/base/json.h"

namespace crucible::engine {

class DynamicLossScaler {
  public:
    explicit DynamicLossScaler(bool enabled, double initial_scale = 65536.0, double growth = 2.0,
                               double backoff = 0.5, int growth_interval = 2000);

    bool enabled() const { return enabled_; }
    double scale() const { return scale_; }
    torch::Tensor scale_loss(const torch::Tensor& loss) const;
    // Divides the gradients by the scale; returns false when any is inf or NaN. One host read.
    bool unscale(const std::vector<torch::Tensor>& params);
    // After a step attempt: found_inf → backoff, else count towards growth.
    void update(bool found_inf);

    Json state() const;
    void load_state(const Json& state);

  private:
    bool enabled_;
    double scale_, growth_, backoff_;
    int growth_interval_;
    int good_steps_ = 0;
};

}  // namespace crucible::engine
