#include "core/engine/device.h"
#include "core/base/environment.h"

#include <ATen/cuda/CUDAContext.h>

#include <cctype>
#include <cstdlib>
#include <cstring>

#include "core/base/error.h"
#include "core/base/gpu_ref.h"

namespace crucible::engine {

bool cuda_available() {
    return torch::cuda::is_available();
}

std::vector<std::string> cuda_device_uuids() {
    std::vector<std::string> out;
    if (!cuda_available()) return out;
    const auto count = static_cast<int>(torch::cuda::device_count());
    for (int i = 0; i < count; ++i) {
        const cudaDeviceProp* prop =
            at::cuda::getDeviceProperties(static_cast<c10::DeviceIndex>(i));
        unsigned char bytes[16];
        std::memcpy(bytes, prop->uuid.bytes, sizeof bytes);
        out.push_back(format_gpu_uuid(bytes));
    }
    return out;
}

std::string DeviceChoice::describe() const {
    if (device.is_cpu()) return "cpu";
    std::string text = "cuda:" + std::to_string(device.index());
    if (cuda_available())
        text += std::string(" (") + at::cuda::getDeviceProperties(device.index())->name + ")";
    return text;
}

DeviceChoice choose_device(const std::string& raw) {
    std::string text;
    for (char c : raw)
        if (!std::isspace(static_cast<unsigned char>(c)))
            text += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    DeviceChoice choice;
    if (text.empty() || text == "auto") {
        if (cuda_available()) {
            choice.device = torch::Device(torch::kCUDA, 0);
            choice.gpu_indices = {0};
        }
        return choice;
    }
    if (text == "cpu") return choice;
    std::vector<GpuRef> refs;
    std::size_t start = 0;
    while (start <= text.size()) {
        const std::size_t comma = text.find(',', start);
        const auto ref = parse_gpu_ref(
            text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
        if (!ref)
            throw InputError("device", "'" + raw +
                                           "' is not cpu, a GPU index like 0, a list like 0,1, "
                                           "cuda:N or a GPU-/MIG- UUID");
        refs.push_back(*ref);
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    if (refs.size() > 1)
        throw InputError("device",
                         "training on several GPUs (" + raw +
                             ") needs distributed training, which this version does not have "
                             "yet; pick one GPU, e.g. device=0");
    std::optional<std::vector<GpuRef>> visible;
    if (const auto env = environment_variable("CUDA_VISIBLE_DEVICES"))
        visible = parse_visible_devices(*env);
    const int ordinal = cuda_ordinal_of(refs[0], visible, cuda_device_uuids());
    choice.device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(ordinal));
    choice.gpu_indices = {ordinal};
    return choice;
}

}  // namespace crucible::engine
