#pragma once
// torch::cat along the channels of channels-last activations, the concatenation every
// YOLO-style neck and C2f block runs. LibTorch copies each input into a channel slice of the
// result with a strided copy whose inner run is one pixel's channels (16 to 128 floats), at about
// half the speed of a plain copy; this copies each pixel's runs with AVX-512 in one parallel
// pass. Backward hands each input its channel slice of the gradient, as torch::cat's does, or
// (CatGrads::Dense) a dense copy of it; the reverse, chunk_channels, joins its outputs' gradients
// the same way.
#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace crucible::engine {

// What each part's gradient is: its channel slice of the output's gradient (a view, as
// torch::cat's backward gives), or a channels-last tensor of its own, for parts a convolution
// made: its backward would otherwise copy the slice dense with LibTorch's strided copy (YOLO's
// head, whose slices are 64 and 4 of 68 channels: its six last convolutions' backward took
// 10-18 ms with slices against 8 ms with dense gradients, traced 320 px steps).
enum class CatGrads { Slices, Dense };

// Equals torch::cat(parts, 1). The fused pass takes 4-D float CPU tensors of one batch, height
// and width, each channels-last or a channel slice of a channels-last tensor, on a CPU with
// AVX-512; anything else goes to torch::cat.
torch::Tensor cat_channels(const std::vector<torch::Tensor>& parts,
                           CatGrads grads = CatGrads::Slices);

// Equals x.chunk(chunks, 1) (channels a multiple of chunks), with a backward that joins the
// chunks' gradients through cat_channels instead of torch::cat. The chunks are views of x as
// chunk's are, but for the last, a dense tensor of its own in x's layout: C2f convolves it, and a
// convolution copies a channel slice dense itself, once forward and again backward.
std::vector<torch::Tensor> chunk_channels(const torch::Tensor& x, std::int64_t chunks);

}  // namespace crucible::engine
