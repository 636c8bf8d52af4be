#include "core/engine/device.h"

#include <cctype>

#include "core/base/error.h"

namespace crucible::engine {

bool cuda_available() {
    return torch::cuda::is_available();
}

std::string DeviceChoice::describe() const {
    if (device.is_cpu()) return "cpu";
    return "cuda:" + std::to_string(device.index());
}

DeviceChoice choose_device(const std::string& raw) {
    std::string text;
    for (char c : raw)
        if (!std::isspace(static_cast<unsigned char>(c)))
            text += static_cast<char>(std::tolower(c));
    DeviceChoice choice;
    if (text.empty() || text == "auto") {
        if (cuda_available()) {
            choice.device = torch::Device(torch::kCUDA, 0);
            choice.gpu_indices = {0};
        }
        return choice;
    }
    if (text == "cpu") return choice;
    if (text.rfind("cuda:", 0) == 0) text = text.substr(5);
    std::vector<int> ids;
    std::size_t start = 0;
    while (start <= text.size()) {
        std::size_t comma = text.find(',', start);
        std::string item =
            text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos ||
            item.size() > 3)
            throw InputError("device",
                             "'" + raw + "' is not cpu, a GPU index like 0, or a list like 0,1");
        ids.push_back(std::stoi(item));
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    if (ids.size() > 1)
        throw InputError("device",
                         "training on several GPUs (" + raw +
                             ") needs distributed training, which this version does not have "
                             "yet; pick one GPU, e.g. device=0");
    if (!cuda_available())
        throw InputError("device", "GPU " + raw +
                                       " was asked for, but this LibTorch build sees no CUDA "
                                       "device; use device=cpu");
    const int count = static_cast<int>(torch::cuda::device_count());
    if (ids[0] >= count)
        throw InputError("device", "GPU " + std::to_string(ids[0]) +
                                       " does not exist (this machine has " +
                                       std::to_string(count) + ")");
    choice.device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(ids[0]));
    choice.gpu_indices = ids;
    return choice;
}

}  // namespace crucible::engine
