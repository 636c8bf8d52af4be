#pragma once
// Exponential moving average of a model's weights (SPECS.md "YOLOv8"): after every optimizer step
// updates += 1 and d = decay · (1 − exp(−updates / tau)); every floating-point parameter and
// buffer becomes d·ema + (1 − d)·model (the reference averages BatchNorm running statistics too);
// integer buffers (num_batches_tracked) are copied.
#include <torch/torch.h>

#include <cstdint>
#include <memory>

namespace crucible::engine {

class ModelEma {
  public:
    // `ema` is a second instance of the same architecture; its state is set from `model`.
    ModelEma(std::shared_ptr<torch::nn::Module> ema, torch::nn::Module& model,
             double decay = 0.9999, double tau = 2000.0);

    void update(torch::nn::Module& model);
    double decay_at(std::int64_t updates) const;

    torch::nn::Module& module() { return *ema_; }
    std::shared_ptr<torch::nn::Module> shared() { return ema_; }
    std::int64_t updates() const { return updates_; }
    void set_updates(std::int64_t updates) { updates_ = updates; }

  private:
    std::shared_ptr<torch::nn::Module> ema_;
    double decay_, tau_;
    std::int64_t updates_ = 0;
};

// Copies every parameter and buffer of `from` into `to` (same architecture, matched by name).
void copy_module_state(torch::nn::Module& from, torch::nn::Module& to);

}  // namespace crucible::engine
