#include "plugins/detect/task/batch_tensors.h"

namespace crucible::detect {

torch::Tensor batch_images(const data::Batch& batch, const torch::Device& device) {
    const std::int64_t n = batch.size, s = batch.imgsz;
    // from_blob does not own the buffer: every path below copies before returning.
    auto bytes = torch::from_blob(const_cast<std::uint8_t*>(batch.pixels.data()), {n, 3, s, s},
                                  torch::kUInt8);
    if (device.is_cpu()) {
        // One pass: the copy converts to float and transposes into the channels-last layout.
        auto out =
            torch::empty({n, 3, s, s}, torch::TensorOptions()
                                           .dtype(torch::kFloat32)
                                           .memory_format(torch::MemoryFormat::ChannelsLast));
        out.copy_(bytes);
        return out.mul_(1.0 / 255.0);
    }
    // Move the 4x smaller bytes, convert on the device.
    return bytes.to(device, /*non_blocking=*/false, /*copy=*/true)
        .to(torch::kFloat32)
        .mul_(1.0 / 255.0)
        .contiguous(torch::MemoryFormat::ChannelsLast);
}

DetectionTargets batch_targets(const data::Batch& batch, const torch::Device& device) {
    const std::int64_t rows = batch.box_count();
    torch::Tensor table = rows == 0 ? torch::zeros({0, 6}, torch::kFloat32)
                                    : torch::from_blob(const_cast<float*>(batch.boxes.data()),
                                                       {rows, 6}, torch::kFloat32)
                                          .clone();
    table = table.to(device);
    DetectionTargets t;
    t.batch_index = table.select(1, 0);
    t.classes = table.select(1, 1);
    t.boxes = table.slice(1, 2, 6);
    return t;
}

}  // namespace crucible::detect
