#pragma once
// The building blocks of the YOLOv8 network (SPECS.md "YOLOv8 detector"): Conv, Bottleneck,
// C2f, SPPF, Concat. Submodule names follow the reference state-dict layout ("conv", "bn",
// "cv1", "cv2", "m") so that weights can be exchanged by name.
#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "core/engine/distributed.h"

namespace crucible::detect {

// Conv2d (no bias, padding k/2) + BatchNorm2d (eps 1e-3, momentum 0.03) + SiLU.
struct ConvOptions {
    ConvOptions(int64_t in_channels, int64_t out_channels, int64_t kernel = 1, int64_t stride = 1)
        : in_channels_(in_channels),
          out_channels_(out_channels),
          kernel_(kernel),
          stride_(stride) {}
    TORCH_ARG(int64_t, in_channels);
    TORCH_ARG(int64_t, out_channels);
    TORCH_ARG(int64_t, kernel) = 1;
    TORCH_ARG(int64_t, stride) = 1;
};

class ConvImpl : public torch::nn::Module {
  public:
    explicit ConvImpl(const ConvOptions& options);
    torch::Tensor forward(const torch::Tensor& x);

    ConvOptions options;
    torch::nn::Conv2d conv{nullptr};
    torch::nn::BatchNorm2d bn{nullptr};
    // Set by enable_sync_batch_norm: `bn` then uses the global batch's statistics in training.
    engine::Collective* sync_bn = nullptr;
};
TORCH_MODULE(Conv);

// SyncBatchNorm for every Conv block of `model` (a data-parallel run's sync_bn=true): the same
// parameters and buffers, batch statistics over all ranks' images.
void enable_sync_batch_norm(torch::nn::Module& model, engine::Collective* collective);

// Two 3x3 Convs c -> c (expansion 1.0 as used inside C2f), residual when `shortcut`.
struct BottleneckOptions {
    BottleneckOptions(int64_t channels, bool shortcut) : channels_(channels), shortcut_(shortcut) {}
    TORCH_ARG(int64_t, channels);
    TORCH_ARG(bool, shortcut) = true;
};

class BottleneckImpl : public torch::nn::Module {
  public:
    explicit BottleneckImpl(const BottleneckOptions& options);
    torch::Tensor forward(const torch::Tensor& x);

    BottleneckOptions options;
    Conv cv1{nullptr};
    Conv cv2{nullptr};
};
TORCH_MODULE(Bottleneck);

// C2f: 1x1 Conv to 2c (c = out/2), split in halves, n Bottlenecks each fed the previous output,
// concat of all (2 + n) c channels, 1x1 Conv to out.
struct C2fOptions {
    C2fOptions(int64_t in_channels, int64_t out_channels, int64_t repeats, bool shortcut)
        : in_channels_(in_channels),
          out_channels_(out_channels),
          repeats_(repeats),
          shortcut_(shortcut) {}
    TORCH_ARG(int64_t, in_channels);
    TORCH_ARG(int64_t, out_channels);
    TORCH_ARG(int64_t, repeats) = 1;
    TORCH_ARG(bool, shortcut) = false;
};

class C2fImpl : public torch::nn::Module {
  public:
    explicit C2fImpl(const C2fOptions& options);
    torch::Tensor forward(const torch::Tensor& x);

    C2fOptions options;
    int64_t hidden = 0;  // c
    Conv cv1{nullptr};
    Conv cv2{nullptr};
    torch::nn::ModuleList m{nullptr};
    std::vector<Bottleneck> blocks;  // typed views of `m`
};
TORCH_MODULE(C2f);

// SPPF: 1x1 Conv to in/2, three chained MaxPool(k, stride 1, padding k/2), concat of the four,
// 1x1 Conv to out.
struct SPPFOptions {
    SPPFOptions(int64_t in_channels, int64_t out_channels, int64_t kernel = 5)
        : in_channels_(in_channels), out_channels_(out_channels), kernel_(kernel) {}
    TORCH_ARG(int64_t, in_channels);
    TORCH_ARG(int64_t, out_channels);
    TORCH_ARG(int64_t, kernel) = 5;
};

class SPPFImpl : public torch::nn::Module {
  public:
    explicit SPPFImpl(const SPPFOptions& options);
    torch::Tensor forward(const torch::Tensor& x);

    SPPFOptions options;
    Conv cv1{nullptr};
    Conv cv2{nullptr};
};
TORCH_MODULE(SPPF);

// Channel concatenation of several inputs (no parameters; occupies a layer index so that the
// following layers keep their reference numbering).
class ConcatImpl : public torch::nn::Module {
  public:
    torch::Tensor forward(const std::vector<torch::Tensor>& inputs);
};
TORCH_MODULE(Concat);

// Nearest-neighbour upsampling by an integer factor (no parameters).
class UpsampleImpl : public torch::nn::Module {
  public:
    explicit UpsampleImpl(int64_t scale = 2) : factor(scale) {}
    torch::Tensor forward(const torch::Tensor& x);
    int64_t factor = 2;
};
TORCH_MODULE(Upsample);

}  // namespace crucible::detect
