#pragma once
// The schedule arithmetic of SPECS.md "YOLOv8" as plain functions, so tests can check the values
// at given iterations by hand: nbs accumulation, warmup, linear / cosine LR factor, optimizer=auto.
// Rounding follows the reference (round half to even, as Python's round()). It knows parameter
// groups only as a list of starting learning rates and warm-up styles (param_groups.h has the
// groups themselves); it never needs LibTorch.
#include <cstdint>
#include <string>
#include <vector>

namespace crucible::engine {

// Round half to even.
double round_half_even(double x);

// max(round(nbs / batch), 1).
int accumulate_steps(int nbs, int batch);
// weight_decay · batch · accumulate / nbs.
double scaled_weight_decay(double weight_decay, int batch, int accumulate, int nbs);
// max(round(warmup_epochs · batches_per_epoch), 100), or -1 (no warmup) when warmup_epochs <= 0.
std::int64_t warmup_iterations(double warmup_epochs, std::int64_t batches_per_epoch);
// Linear: (1 − e/epochs)(1 − lrf) + lrf; cosine: ((1 − cos(e·π/epochs)) / 2)(lrf − 1) + 1.
double lr_factor(int epoch, int epochs, double lrf, bool cosine);
// Linear interpolation of x in [x0, x1] to [y0, y1], clamped at the ends (numpy.interp).
double interp(double x, double x0, double x1, double y0, double y1);

// How a parameter group's learning rate warms up.
enum class Warmup {
    Ramp,  // rises from 0 to its learning rate (weights)
    Bias,  // falls from warmup_bias_lr to its learning rate (the reference's biases, pg0)
};

// One parameter group as the schedule sees it.
struct ScheduleGroup {
    double initial_lr = 0.01;  // the run's learning rate times the group's factor
    Warmup warmup = Warmup::Ramp;
};

struct ScheduleConfig {
    int epochs = 100;
    int batch = 16;
    int nbs = 64;
    double lrf = 0.01;
    bool cos_lr = false;
    double momentum = 0.937;
    double warmup_momentum = 0.8;
    double warmup_bias_lr = 0.1;
    std::int64_t warmup_iters = -1;  // from warmup_iterations()
    std::vector<ScheduleGroup> groups;
    bool has_momentum = true;  // SGD: momentum ramps during warmup
};

struct ScheduleValues {
    int accumulate = 1;
    std::vector<double> lr;  // one per group, in ScheduleConfig::groups order
    double momentum = 0;     // only meaningful when has_momentum
};

// Values in force for global iteration `ni` (= index + batches_per_epoch · epoch) of `epoch`.
// During warmup (ni <= warmup_iters) a Bias group's LR falls from warmup_bias_lr and a Ramp
// group's rises from 0 towards initial_lr · lr_factor(epoch), momentum rises warmup_momentum →
// momentum and the accumulation ramps 1 → nbs/batch; afterwards LR = initial_lr · lr_factor(epoch).
ScheduleValues schedule_at(const ScheduleConfig& config, std::int64_t ni, int epoch);

// optimizer=auto (SPECS.md): iterations = ceil(N / max(batch, nbs)) · epochs; > 10,000 → SGD
// (lr 0.01, momentum 0.9), else AdamW (lr round(0.002·5/(4+nc), 6), momentum/beta1 0.9) with
// warmup_bias_lr 0. Explicit choices keep lr0 / momentum / warmup_bias_lr.
struct OptimizerChoice {
    std::string name;  // "SGD", "AdamW", "Adam"
    double lr = 0.01;
    double momentum = 0.937;  // SGD momentum or Adam beta1
    double warmup_bias_lr = 0.1;
};
OptimizerChoice choose_optimizer(const std::string& requested, std::int64_t items_per_epoch,
                                 int batch, int nbs, int epochs, int num_classes, double lr0,
                                 double momentum, double warmup_bias_lr);

}  // namespace crucible::engine
