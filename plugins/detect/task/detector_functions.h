#pragma once
// A detector given as a function rather than a LibTorch module (an exported ONNX model), as the
// validator and the predictor take it. Both take letterboxed images [B, 3, S, S] (RGB in [0, 1]).
#include <torch/torch.h>

#include <functional>
#include <vector>

namespace crucible::detect {

// -> the eval-mode output [B, 4 + nc, A] (boxes as cx, cy, w, h in input pixels, class scores).
using DecodedForward = std::function<torch::Tensor(const torch::Tensor& images)>;

// -> each image's kept boxes after NMS, [n, 6] = x1, y1, x2, y2 (input pixels), confidence,
// class: a model that does its own NMS (an export with nms=true), or the above after ours.
using DetectionsForward = std::function<std::vector<torch::Tensor>(const torch::Tensor& images)>;

}  // namespace crucible::detect
