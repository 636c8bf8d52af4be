#pragma once
// A loader batch (core/data, plain bytes) as LibTorch tensors: images as float RGB in [0, 1],
// channels-last (oneDNN convolutions on CPU and tensor cores on CUDA are much faster with it),
// and the box table as the loss's DetectionTargets. Training goes through the two halves (the
// host views, uploaded by engine::DeviceUpload, then the conversion on the device); validation
// and prediction use the one-call forms.
#include <torch/torch.h>

#include "core/data/loader/batch_loader.h"
#include "plugins/detect/loss/detection_loss.h"

namespace crucible::detect {

// The batch's pixels as uint8 [size, 3, imgsz, imgsz] and its box rows (image index, class, cx,
// cy, w, h normalized) as float [rows, 6]: views of the batch's buffers (no copy), valid while
// the batch lives.
torch::Tensor pixel_view(const data::Batch& batch);
torch::Tensor box_table_view(const data::Batch& batch);

// uint8 pixels (on any device) as float32, channels-last, values / 255, on the same device.
// A CPU input is only read (the result is a new tensor).
torch::Tensor images_from_pixels(const torch::Tensor& pixels);
// Targets from a box table (on the device the loss runs on).
DetectionTargets targets_from_table(const torch::Tensor& table);

// The one-call forms: the batch's images and targets on `device`. The batch's buffers are only
// read; the caller may recycle them afterwards.
torch::Tensor batch_images(const data::Batch& batch, const torch::Device& device);
DetectionTargets batch_targets(const data::Batch& batch, const torch::Device& device);

}  // namespace crucible::detect
