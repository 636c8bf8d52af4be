#include "core/engine/optimizer_factory.h"

#include "core/base/error.h"
#include "core/engine/fused_optimizers.h"

namespace crucible::engine {

namespace {

template <class Options>
std::vector<torch::optim::OptimizerParamGroup> make_groups(const ParamGroups& groups,
                                                           const Options& base, double decay) {
    std::vector<torch::optim::OptimizerParamGroup> out;
    for (const auto& g : groups) {
        auto o = std::make_unique<Options>(base);
        o->weight_decay(g.decay == WeightDecay::Scaled ? decay : 0.0);
        o->lr(base.lr() * g.lr_factor);
        out.emplace_back(g.params, std::move(o));
    }
    return out;
}

}  // namespace

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const OptimizerChoice& c,
                                                        const ParamGroups& groups, double decay) {
    check_param_groups(groups);
    if (parameter_count(groups) == 0) throw Error("the model has no trainable parameters");
    if (c.name == "SGD") {
        auto base = torch::optim::SGDOptions(c.lr)
                        .momentum(c.momentum)
                        .nesterov(c.momentum > 0)
                        .weight_decay(0);
        return std::make_unique<FusedSgd>(make_groups(groups, base, decay), base);
    }
    if (c.name == "AdamW") {
        auto base = torch::optim::AdamWOptions(c.lr)
                        .betas(std::make_tuple(c.momentum, 0.999))
                        .weight_decay(0);
        return std::make_unique<FusedAdamW>(make_groups(groups, base, decay), base);
    }
    if (c.name == "Adam") {
        auto base = torch::optim::AdamOptions(c.lr)
                        .betas(std::make_tuple(c.momentum, 0.999))
                        .weight_decay(0);
        return std::make_unique<FusedAdam>(make_groups(groups, base, decay), base);
    }
    throw InputError("optimizer", "'" + c.name + "' is not SGD, AdamW or Adam");
}

void set_group_lr(torch::optim::Optimizer& optimizer, std::size_t group, double lr) {
    optimizer.param_groups().at(group).options().set_lr(lr);
}

void set_group_momentum(torch::optim::Optimizer& optimizer, std::size_t group, double momentum) {
    auto& options = optimizer.param_groups().at(group).options();
    if (auto* sgd = dynamic_cast<torch::optim::SGDOptions*>(&options)) sgd->momentum(momentum);
}

double group_lr(torch::optim::Optimizer& optimizer, std::size_t group) {
    return optimizer.param_groups().at(group).options().get_lr();
}

}  // namespace crucible::engine
