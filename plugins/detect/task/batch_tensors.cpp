#include "plugins/detect/task/batch_tensors.h"

namespace crucible::detect {

torch::Tensor pixel_view(const data::Batch& batch) {
    const std::int64_t n = batch.size, s = batch.imgsz;
    return torch::from_blob(const_cast<std::uint8_t*>(batch.pixels.data()), {n, 3, s, s},
                            torch::kUInt8);
}

torch::Tensor box_table_view(const data::Batch& batch) {
    const std::int64_t rows = batch.box_count();
    if (rows == 0) return torch::zeros({0, 6}, torch::kFloat32);
    return torch::from_blob(const_cast<float*>(batch.boxes.data()), {rows, 6}, torch::kFloat32);
}

torch::Tensor images_from_pixels(const torch::Tensor& pixels) {
    if (pixels.is_cpu()) {
        // One pass: the copy converts to float and transposes into the channels-last layout.
        auto out =
            torch::empty(pixels.sizes(), torch::TensorOptions()
                                             .dtype(torch::kFloat32)
                                             .memory_format(torch::MemoryFormat::ChannelsLast));
        out.copy_(pixels);
        return out.mul_(1.0 / 255.0);
    }
    return pixels.to(torch::kFloat32)
        .mul_(1.0 / 255.0)
        .contiguous(torch::MemoryFormat::ChannelsLast);
}

DetectionTargets targets_from_table(const torch::Tensor& table) {
    DetectionTargets t;
    t.batch_index = table.select(1, 0);
    t.classes = table.select(1, 1);
    t.boxes = table.slice(1, 2, 6);
    return t;
}

torch::Tensor batch_images(const data::Batch& batch, const torch::Device& device) {
    if (device.is_cpu()) return images_from_pixels(pixel_view(batch));
    // Move the 4x smaller bytes, convert on the device.
    return images_from_pixels(pixel_view(batch).to(device, /*non_blocking=*/false, /*copy=*/true));
}

DetectionTargets batch_targets(const data::Batch& batch, const torch::Device& device) {
    // A copy on the CPU too: the targets outlive the batch's buffer.
    return targets_from_table(box_table_view(batch).to(device, /*non_blocking=*/false,
                                                       /*copy=*/true));
}

}  // namespace crucible::detect
