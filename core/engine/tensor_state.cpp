#include "core/engine/tensor_state.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Generator.h>
#include <torch/torch.h>

#include <algorithm>
#include <mutex>
#include <optional>
#include <sstream>

#include "core/base/error.h"

namespace crucible::engine {

namespace {

std::string archive_bytes(torch::serialize::OutputArchive& archive) {
    std::ostringstream out(std::ios::binary);
    archive.save_to(out);
    return std::move(out).str();
}

// `device`: where the archive's tensors land (else where they were saved).
void load_archive(torch::serialize::InputArchive& archive, const std::string& bytes,
                  std::optional<torch::Device> device = std::nullopt) {
    archive.load_from(bytes.data(), bytes.size(), device);
}

// "p12": built with append, not operator+ (GCC 12 -Wstringop-overflow false positive).
std::string key_of(const char* prefix, std::int64_t i) {
    std::string key(prefix);
    key.append(std::to_string(i));
    return key;
}

torch::Tensor read_tensor(torch::serialize::InputArchive& archive, const std::string& key) {
    torch::Tensor t;
    archive.read(key, t);
    return t;
}

}  // namespace

namespace {

std::vector<std::pair<std::string, torch::Tensor>> selected_parameters(torch::nn::Module& module,
                                                                       ModuleState which) {
    std::vector<std::pair<std::string, torch::Tensor>> out;
    for (const auto& p : module.named_parameters())
        if (which == ModuleState::All || p.value().requires_grad())
            out.emplace_back(p.key(), p.value());
    return out;
}

}  // namespace

std::vector<std::pair<std::string, torch::Tensor>> module_state(torch::nn::Module& module,
                                                                ModuleState which) {
    auto out = selected_parameters(module, which);
    for (const auto& b : module.named_buffers())
        out.emplace_back(b.key(), b.value());
    return out;
}

// Layout (unchanged since the first checkpoints, so they still resume): the selected
// parameters as p0, p1, ... with their count "np", the buffers as b0, ... with "nb".
std::string module_to_bytes(torch::nn::Module& module, ModuleState which) {
    torch::serialize::OutputArchive archive;
    const auto params = selected_parameters(module, which);
    const auto buffers = module.named_buffers();
    std::int64_t i = 0;
    for (const auto& [name, p] : params)
        archive.write(key_of("p", i++), p.detach());
    i = 0;
    for (const auto& b : buffers)
        archive.write(key_of("b", i++), b.value(), true);
    archive.write("np", torch::tensor(static_cast<std::int64_t>(params.size())));
    archive.write("nb", torch::tensor(static_cast<std::int64_t>(buffers.size())));
    return archive_bytes(archive);
}

void module_from_bytes(torch::nn::Module& module, const std::string& bytes, ModuleState which) {
    torch::serialize::InputArchive archive;
    load_archive(archive, bytes);
    const auto params = selected_parameters(module, which);
    auto buffers = module.named_buffers();
    if (read_tensor(archive, "np").item<std::int64_t>() !=
            static_cast<std::int64_t>(params.size()) ||
        read_tensor(archive, "nb").item<std::int64_t>() !=
            static_cast<std::int64_t>(buffers.size()))
        throw Error("checkpoint: the model in the checkpoint has a different structure");
    torch::NoGradGuard no_grad;
    std::int64_t i = 0;
    for (const auto& [name, p] : params) {
        torch::Tensor t = read_tensor(archive, key_of("p", i++));
        if (!t.sizes().equals(p.sizes()))
            throw Error("checkpoint: tensor '" + name + "' has another shape in the checkpoint");
        p.copy_(t);
    }
    i = 0;
    for (auto& b : buffers) {
        torch::Tensor t;
        archive.read(key_of("b", i++), t, true);
        if (!t.sizes().equals(b.value().sizes()))
            throw Error("checkpoint: buffer '" + b.key() + "' has another shape in the checkpoint");
        b.value().copy_(t);
    }
}

std::string optimizer_to_bytes(torch::optim::Optimizer& optimizer) {
    torch::serialize::OutputArchive archive;
    optimizer.save(archive);
    return archive_bytes(archive);
}

void optimizer_from_bytes(torch::optim::Optimizer& optimizer, const std::string& bytes) {
    // The state (momentum, Adam's moments) lands on the parameters' device, which need not be
    // the one it was saved from: a run checkpointed on a GPU may resume on another or the CPU.
    std::optional<torch::Device> device;
    for (const auto& group : optimizer.param_groups())
        if (!group.params().empty()) {
            device = group.params().front().device();
            break;
        }
    torch::serialize::InputArchive archive;
    load_archive(archive, bytes, device);
    optimizer.load(archive);
}

std::string grads_to_bytes(torch::nn::Module& module) {
    torch::serialize::OutputArchive archive;
    std::int64_t i = 0;
    for (const auto& p : module.parameters()) {
        if (p.grad().defined()) archive.write(key_of("g", i), p.grad());
        ++i;
    }
    archive.write("n", torch::tensor(i));
    return archive_bytes(archive);
}

void grads_from_bytes(torch::nn::Module& module, const std::string& bytes) {
    torch::serialize::InputArchive archive;
    load_archive(archive, bytes);
    std::vector<std::string> keys = archive.keys();
    std::int64_t i = 0;
    torch::NoGradGuard no_grad;
    for (auto& p : module.parameters()) {
        const std::string key = key_of("g", i++);
        if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
            if (p.grad().defined()) p.mutable_grad() = torch::Tensor();
            continue;
        }
        torch::Tensor g = read_tensor(archive, key).to(p.device());
        if (p.grad().defined())
            p.mutable_grad().copy_(g);
        else
            p.mutable_grad() = g.clone();
    }
}

std::string rng_to_bytes() {
    torch::serialize::OutputArchive archive;
    {
        auto gen = at::detail::getDefaultCPUGenerator();
        std::lock_guard<std::mutex> lock(gen.mutex());
        archive.write("cpu", gen.get_state());
    }
    if (torch::cuda::is_available()) {
        const auto n = static_cast<int>(torch::cuda::device_count());
        for (int d = 0; d < n; ++d) {
            auto gen = at::globalContext().defaultGenerator(
                at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(d)));
            std::lock_guard<std::mutex> lock(gen.mutex());
            archive.write(key_of("cuda", d), gen.get_state());
        }
    }
    return archive_bytes(archive);
}

void rng_from_bytes(const std::string& bytes) {
    torch::serialize::InputArchive archive;
    load_archive(archive, bytes);
    std::vector<std::string> keys = archive.keys();
    {
        auto gen = at::detail::getDefaultCPUGenerator();
        std::lock_guard<std::mutex> lock(gen.mutex());
        gen.set_state(read_tensor(archive, "cpu"));
    }
    if (torch::cuda::is_available()) {
        const auto n = static_cast<int>(torch::cuda::device_count());
        for (int d = 0; d < n; ++d) {
            const std::string key = key_of("cuda", d);
            if (std::find(keys.begin(), keys.end(), key) == keys.end()) continue;
            auto gen = at::globalContext().defaultGenerator(
                at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(d)));
            std::lock_guard<std::mutex> lock(gen.mutex());
            gen.set_state(read_tensor(archive, key));
        }
    }
}

}  // namespace crucible::engine
