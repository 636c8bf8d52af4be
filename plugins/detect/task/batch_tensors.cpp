#include "plugins/detect/task/batch_tensors.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdint>

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

namespace {

// Planar bytes [n, c, h, w] to channels-last floats times `scale`, in one pass that converts and
// interleaves. LibTorch's copy_ between the two layouts is a strided transpose: 7.5 ms for a
// batch of 16 at 320 px on the engine's thread, each step.
torch::Tensor planar_bytes_to_channels_last(const torch::Tensor& pixels, float scale) {
    TORCH_CHECK(pixels.scalar_type() == torch::kUInt8 && pixels.dim() == 4,
                "images_from_pixels: expected uint8 [n, 3, h, w] pixels, got ",
                pixels.scalar_type(), " ", pixels.sizes());
    const torch::Tensor src = pixels.contiguous();
    auto out = torch::empty(src.sizes(), torch::TensorOptions()
                                             .dtype(torch::kFloat32)
                                             .memory_format(torch::MemoryFormat::ChannelsLast));
    const std::int64_t channels = src.size(1), plane = src.size(2) * src.size(3);
    const std::uint8_t* in = src.data_ptr<std::uint8_t>();
    float* dst = out.data_ptr<float>();
    // Ranges of pixels over the whole batch; a range may cross from one image into the next.
    at::parallel_for(0, src.size(0) * plane, 16384, [&](std::int64_t begin, std::int64_t end) {
        std::int64_t image = begin / plane, at = begin % plane;
        for (std::int64_t p = begin; p < end;) {
            const std::int64_t run = std::min(end - p, plane - at);
            const std::uint8_t* planes = in + image * channels * plane + at;
            float* d = dst + p * channels;
            for (std::int64_t i = 0; i < run; ++i)
                for (std::int64_t k = 0; k < channels; ++k)
                    d[i * channels + k] = static_cast<float>(planes[k * plane + i]) * scale;
            p += run;
            ++image;
            at = 0;
        }
    });
    return out;
}

}  // namespace

torch::Tensor images_from_pixels(const torch::Tensor& pixels) {
    // 1/255 rounded once to float, as LibTorch's float multiply by a scalar rounds it.
    const float scale = static_cast<float>(1.0 / 255.0);
    if (pixels.is_cpu()) return planar_bytes_to_channels_last(pixels, scale);
    return pixels.to(torch::kFloat32).mul_(scale).contiguous(torch::MemoryFormat::ChannelsLast);
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
