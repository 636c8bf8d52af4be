#include "core/engine/optimizer_state.h"

#include <map>
#include <memory>
#include <optional>
#include <sstream>

#include "core/base/error.h"

namespace crucible::engine {

namespace {

using torch::optim::OptimizerParamState;
using torch::serialize::InputArchive;
using torch::serialize::OutputArchive;

constexpr const char* kFormat = "crucible.optimizer_groups.1";

enum class Kind { Sgd, Adam, AdamW };

Kind kind_of(const torch::optim::Optimizer& optimizer) {
    if (dynamic_cast<const torch::optim::SGD*>(&optimizer)) return Kind::Sgd;
    if (dynamic_cast<const torch::optim::AdamW*>(&optimizer)) return Kind::AdamW;
    if (dynamic_cast<const torch::optim::Adam*>(&optimizer)) return Kind::Adam;
    throw Error("optimizer state: only SGD, Adam and AdamW are saved");
}

std::unique_ptr<OptimizerParamState> read_param_state(Kind kind, InputArchive& archive) {
    std::unique_ptr<OptimizerParamState> state;
    switch (kind) {
        case Kind::Sgd:
            state = std::make_unique<torch::optim::SGDParamState>();
            break;
        case Kind::Adam:
            state = std::make_unique<torch::optim::AdamParamState>();
            break;
        case Kind::AdamW:
            state = std::make_unique<torch::optim::AdamWParamState>();
            break;
    }
    state->serialize(archive);
    return state;
}

// The buffer whose shape is the parameter's (undefined when the state has none).
torch::Tensor shaped_buffer(const OptimizerParamState& state) {
    if (const auto* s = dynamic_cast<const torch::optim::SGDParamState*>(&state))
        return s->momentum_buffer();
    if (const auto* s = dynamic_cast<const torch::optim::AdamWParamState*>(&state))
        return s->exp_avg();
    if (const auto* s = dynamic_cast<const torch::optim::AdamParamState*>(&state))
        return s->exp_avg();
    return {};
}

std::int64_t read_int(InputArchive& archive, const std::string& key) {
    torch::Tensor t;
    archive.read(key, t);
    return t.item<std::int64_t>();
}

// One group as a file holds it: a state (or none) per parameter, in the group's order.
struct SavedGroup {
    std::string name;
    std::vector<std::unique_ptr<OptimizerParamState>> states;
};

std::vector<SavedGroup> read_named_groups(Kind kind, InputArchive& archive) {
    std::vector<SavedGroup> out;
    const std::int64_t n = read_int(archive, "groups/size");
    for (std::int64_t i = 0; i < n; ++i) {
        InputArchive group;
        archive.read("groups/" + std::to_string(i), group);
        SavedGroup saved;
        c10::IValue name;
        group.read("name", name);
        saved.name = name.toStringRef();
        saved.states.resize(static_cast<std::size_t>(read_int(group, "params/size")));
        for (std::size_t k = 0; k < saved.states.size(); ++k) {
            InputArchive state;
            if (group.try_read("state/" + std::to_string(k), state))
                saved.states[k] = read_param_state(kind, state);
        }
        out.push_back(std::move(saved));
    }
    return out;
}

// LibTorch's layout (torch/optim/serialize.h): "state" holds one archive per parameter, named by
// the address its tensor had when saved; "param_groups" lists those names group by group.
std::vector<SavedGroup> read_libtorch_groups(Kind kind, InputArchive& archive) {
    InputArchive state_archive, groups_archive;
    archive.read("state", state_archive);
    archive.read("param_groups", groups_archive);
    std::map<std::string, std::unique_ptr<OptimizerParamState>> by_key;
    for (const auto& key : state_archive.keys()) {
        InputArchive state;
        state_archive.read(key, state);
        by_key[key] = read_param_state(kind, state);
    }
    std::vector<SavedGroup> out;
    const std::int64_t n = read_int(groups_archive, "param_groups/size");
    for (std::int64_t i = 0; i < n; ++i) {
        InputArchive group;
        groups_archive.read("param_groups/" + std::to_string(i), group);
        SavedGroup saved;
        saved.name = "pg" + std::to_string(i);
        const std::int64_t size = read_int(group, "params/size");
        for (std::int64_t k = 0; k < size; ++k) {
            c10::IValue key;
            group.read("params/" + std::to_string(k), key);
            auto it = by_key.find(key.toStringRef());
            saved.states.push_back(it == by_key.end() ? nullptr : std::move(it->second));
        }
        out.push_back(std::move(saved));
    }
    return out;
}

std::string joined(const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names)
        out += (out.empty() ? "" : ", ") + n;
    return out;
}

void place(torch::optim::Optimizer& optimizer, const torch::Tensor& param,
           std::unique_ptr<OptimizerParamState> state, const std::string& where) {
    if (!state) return;
    const torch::Tensor buffer = shaped_buffer(*state);
    if (buffer.defined() && !buffer.sizes().equals(param.sizes()))
        throw Error("optimizer state: " + where + " has another shape in the checkpoint");
    optimizer.state()[param.unsafeGetTensorImpl()] = std::move(state);
}

}  // namespace

std::string optimizer_state_to_bytes(torch::optim::Optimizer& optimizer,
                                     const std::vector<std::string>& names) {
    kind_of(optimizer);
    const auto& groups = optimizer.param_groups();
    if (names.size() != groups.size())
        throw Error("optimizer state: " + std::to_string(names.size()) + " names for " +
                    std::to_string(groups.size()) + " groups");
    OutputArchive archive;
    archive.write("format", c10::IValue(std::string(kFormat)));
    archive.write("groups/size", torch::tensor(static_cast<std::int64_t>(groups.size())));
    for (std::size_t i = 0; i < groups.size(); ++i) {
        OutputArchive group(archive.compilation_unit());
        group.write("name", c10::IValue(names[i]));
        const auto& params = groups[i].params();
        group.write("params/size", torch::tensor(static_cast<std::int64_t>(params.size())));
        for (std::size_t k = 0; k < params.size(); ++k) {
            const auto it = optimizer.state().find(params[k].unsafeGetTensorImpl());
            if (it == optimizer.state().end()) continue;
            OutputArchive state(archive.compilation_unit());
            it->second->serialize(state);
            group.write("state/" + std::to_string(k), state);
        }
        archive.write("groups/" + std::to_string(i), group);
    }
    std::ostringstream out(std::ios::binary);
    archive.save_to(out);
    return std::move(out).str();
}

void optimizer_state_from_bytes(torch::optim::Optimizer& optimizer,
                                const std::vector<std::string>& names, const std::string& bytes) {
    const Kind kind = kind_of(optimizer);
    auto& groups = optimizer.param_groups();
    if (names.size() != groups.size())
        throw Error("optimizer state: " + std::to_string(names.size()) + " names for " +
                    std::to_string(groups.size()) + " groups");
    // The state lands where the parameters are, wherever it was saved from.
    std::optional<torch::Device> device;
    for (const auto& group : groups)
        if (!group.params().empty()) {
            device = group.params().front().device();
            break;
        }
    InputArchive archive;
    archive.load_from(bytes.data(), bytes.size(), device);
    c10::IValue format;
    const bool named = archive.try_read("format", format);
    if (named && format.toStringRef() != kFormat)
        throw Error("optimizer state: unknown layout '" + format.toStringRef() + "'");
    std::vector<SavedGroup> saved =
        named ? read_named_groups(kind, archive) : read_libtorch_groups(kind, archive);

    std::map<std::string, SavedGroup*> by_name;
    std::vector<std::string> saved_names;
    for (auto& g : saved) {
        by_name[g.name] = &g;
        saved_names.push_back(g.name);
    }
    bool same_groups = saved.size() == groups.size();
    for (const auto& name : names)
        same_groups = same_groups && by_name.count(name);
    if (same_groups) {
        for (std::size_t i = 0; i < groups.size(); ++i) {
            SavedGroup& g = *by_name.at(names[i]);
            const auto& params = groups[i].params();
            if (g.states.size() != params.size())
                throw Error("optimizer state: group '" + names[i] + "' has " +
                            std::to_string(g.states.size()) + " parameters in the checkpoint, " +
                            std::to_string(params.size()) + " in this run");
            for (std::size_t k = 0; k < params.size(); ++k)
                place(optimizer, params[k], std::move(g.states[k]),
                      "parameter " + std::to_string(k) + " of group '" + names[i] + "'");
        }
        return;
    }
    if (named)
        throw Error("optimizer state: the checkpoint's parameter groups (" + joined(saved_names) +
                    ") are not this run's (" + joined(names) + ")");
    // The older layout with groups of another task's making: by position across the groups.
    std::vector<std::unique_ptr<OptimizerParamState>> flat;
    for (auto& g : saved)
        for (auto& s : g.states)
            flat.push_back(std::move(s));
    std::vector<torch::Tensor> params;
    for (const auto& g : groups)
        params.insert(params.end(), g.params().begin(), g.params().end());
    if (flat.size() != params.size())
        throw Error("optimizer state: " + std::to_string(flat.size()) +
                    " parameters in the checkpoint's groups (" + joined(saved_names) + "), " +
                    std::to_string(params.size()) + " in this run's (" + joined(names) + ")");
    for (std::size_t k = 0; k < params.size(); ++k)
        place(optimizer, params[k], std::move(flat[k]), "parameter " + std::to_string(k));
}

}  // namespace crucible::engine
