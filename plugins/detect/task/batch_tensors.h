#pragma once
// A loader batch (core/data, plain bytes) as LibTorch tensors: images as float RGB in [0, 1],
// channels-last (oneDNN convolutions on CPU and tensor cores on CUDA are much faster with it),
// and the box table as the loss's DetectionTargets.
#include <torch/torch.h>

#include "core/data/loader/batch_loader.h"
#include "plugins/detect/loss/detection_loss.h"

namespace crucible::detect {

// [size, 3, imgsz, imgsz] float32 on `device`, channels-last, values / 255. The batch's pixel
// buffer is only read; the caller may recycle it afterwards.
torch::Tensor batch_images(const data::Batch& batch, const torch::Device& device);

// Box rows (image index, class, cx, cy, w, h normalized) as targets on `device`.
DetectionTargets batch_targets(const data::Batch& batch, const torch::Device& device);

}  // namespace crucible::detect
