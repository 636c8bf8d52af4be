// plugins/detect/task/batch_tensors.h: a loader batch's planar RGB bytes become channels-last
// floats in [0, 1] in one pass of our own. They must equal LibTorch's conversion bit for bit,
// over several images, so that the pass's ranges start and end inside an image.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "plugins/detect/task/batch_tensors.h"

using namespace crucible;

namespace {

torch::Tensor libtorch_conversion(const torch::Tensor& pixels) {
    return pixels.to(torch::kFloat32)
        .mul_(1.0 / 255.0)
        .contiguous(torch::MemoryFormat::ChannelsLast);
}

TEST(BatchTensors, ImagesFromPixelsEqualLibTorchsConversion) {
    torch::manual_seed(3);
    // 7 images of 61 x 67 px: 28,609 pixels, more than one range of the parallel pass.
    for (const auto& sizes :
         {std::vector<std::int64_t>{7, 3, 61, 67}, {1, 3, 5, 3}, {2, 3, 1, 1}}) {
        const torch::Tensor pixels = torch::randint(0, 256, sizes, torch::kUInt8);
        const torch::Tensor images = detect::images_from_pixels(pixels);
        EXPECT_EQ(images.scalar_type(), torch::kFloat32);
        EXPECT_TRUE(images.is_contiguous(torch::MemoryFormat::ChannelsLast));
        EXPECT_TRUE(torch::equal(images, libtorch_conversion(pixels))) << images.sizes();
    }
}

TEST(BatchTensors, ImagesFromPixelsCoverTheWholeByteRange) {
    const torch::Tensor pixels =
        torch::arange(256, torch::kUInt8).view({1, 1, 16, 16}).expand({2, 3, 16, 16});
    const torch::Tensor images = detect::images_from_pixels(pixels);
    EXPECT_EQ(images.min().item<float>(), 0.0f);
    EXPECT_EQ(images.max().item<float>(), 1.0f);
    EXPECT_TRUE(torch::equal(images, libtorch_conversion(pixels)));
}

}  // namespace
