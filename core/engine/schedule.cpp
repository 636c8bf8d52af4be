#include "core/engine/schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/base/error.h"

namespace crucible::engine {

double round_half_even(double x) {
    const double floor = std::floor(x);
    const double diff = x - floor;
    if (diff > 0.5) return floor + 1;
    if (diff < 0.5) return floor;
    return std::fmod(floor, 2.0) == 0 ? floor : floor + 1;
}

int accumulate_steps(int nbs, int batch) {
    if (batch <= 0) throw InputError("batch", "must be positive");
    return std::max(static_cast<int>(round_half_even(static_cast<double>(nbs) / batch)), 1);
}

double scaled_weight_decay(double weight_decay, int batch, int accumulate, int nbs) {
    return weight_decay * batch * accumulate / nbs;
}

std::int64_t warmup_iterations(double warmup_epochs, std::int64_t batches_per_epoch) {
    if (warmup_epochs <= 0) return -1;
    return std::max<std::int64_t>(static_cast<std::int64_t>(round_half_even(
                                      warmup_epochs * static_cast<double>(batches_per_epoch))),
                                  100);
}

double lr_factor(int epoch, int epochs, double lrf, bool cosine) {
    const double e = epoch, n = std::max(epochs, 1);
    if (cosine) return ((1 - std::cos(e * std::numbers::pi / n)) / 2) * (lrf - 1) + 1;
    return std::max(1 - e / n, 0.0) * (1.0 - lrf) + lrf;
}

double interp(double x, double x0, double x1, double y0, double y1) {
    if (x <= x0) return y0;
    if (x >= x1) return y1;
    return y0 + (x - x0) * (y1 - y0) / (x1 - x0);
}

ScheduleValues schedule_at(const ScheduleConfig& c, std::int64_t ni, int epoch) {
    ScheduleValues v;
    const double f = lr_factor(epoch, c.epochs, c.lrf, c.cos_lr);
    v.accumulate = accumulate_steps(c.nbs, c.batch);
    v.momentum = c.momentum;
    v.lr.reserve(c.groups.size());
    for (const auto& g : c.groups)
        v.lr.push_back(g.initial_lr * f);
    if (c.warmup_iters > 0 && ni <= c.warmup_iters) {
        const double x = static_cast<double>(ni), x1 = static_cast<double>(c.warmup_iters);
        v.accumulate = std::max(1, static_cast<int>(round_half_even(
                                       interp(x, 0, x1, 1, static_cast<double>(c.nbs) / c.batch))));
        for (std::size_t j = 0; j < c.groups.size(); ++j) {
            const double start = c.groups[j].warmup == Warmup::Bias ? c.warmup_bias_lr : 0.0;
            v.lr[j] = interp(x, 0, x1, start, c.groups[j].initial_lr * f);
        }
        if (c.has_momentum) v.momentum = interp(x, 0, x1, c.warmup_momentum, c.momentum);
    }
    return v;
}

OptimizerChoice choose_optimizer(const std::string& requested, std::int64_t items, int batch,
                                 int nbs, int epochs, int num_classes, double lr0, double momentum,
                                 double warmup_bias_lr) {
    OptimizerChoice c{requested, lr0, momentum, warmup_bias_lr};
    if (requested == "auto") {
        const std::int64_t per_epoch = (items + std::max(batch, nbs) - 1) / std::max(batch, nbs);
        const std::int64_t iterations = per_epoch * epochs;
        if (iterations > 10000) {
            c = {"SGD", 0.01, 0.9, warmup_bias_lr};
        } else {
            const double lr = std::round(0.002 * 5 / (4 + num_classes) * 1e6) / 1e6;
            c = {"AdamW", lr, 0.9, 0.0};
        }
        return c;
    }
    if (requested != "SGD" && requested != "AdamW" && requested != "Adam")
        throw InputError("optimizer", "'" + requested + "' is not auto, SGD, AdamW or Adam");
    return c;
}

}  // namespace crucible::engine
