// core/engine/channel_cat.h: cat_channels must equal torch::cat(parts, 1), values and gradients,
// for channels-last parts, for channel slices of a wider tensor (what C2f's chunk gives), for
// channel counts that leave a partial vector, and for the cases it leaves to torch::cat.
#include "core/engine/channel_cat.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/base/cpu_features.h"

using namespace crucible;

namespace {

torch::Tensor channels_last(torch::Tensor t) {
    return t.contiguous(torch::MemoryFormat::ChannelsLast);
}

std::string grad_name(const torch::Tensor& t) {
    return t.grad_fn() ? t.grad_fn()->name() : "";
}

// Values and per-part gradients of cat_channels against torch::cat on clones of `parts`.
void expect_same_as_torch_cat(const std::vector<torch::Tensor>& parts, bool expect_fused) {
    std::vector<torch::Tensor> ours, theirs;
    for (const auto& p : parts) {
        ours.push_back(p.detach().clone().requires_grad_(true));
        theirs.push_back(p.detach().clone().requires_grad_(true));
    }
    const auto y = engine::cat_channels(ours);
    const auto expected = torch::cat(theirs, 1);
    ASSERT_EQ(y.sizes(), expected.sizes());
    EXPECT_TRUE(torch::equal(y, expected));
    EXPECT_EQ(grad_name(y).find("ChannelCat") != std::string::npos, expect_fused) << grad_name(y);
    const auto dy = torch::randn_like(expected);
    y.backward(dy);
    expected.backward(dy);
    for (std::size_t i = 0; i < parts.size(); ++i)
        EXPECT_TRUE(torch::equal(ours[i].grad(), theirs[i].grad())) << "part " << i;
}

bool fused_here() {
    return cpu_features().avx512f;
}

TEST(ChannelCat, ChannelsLastPartsOfEveryWidth) {
    torch::manual_seed(1);
    expect_same_as_torch_cat(
        {channels_last(torch::randn({2, 16, 5, 7})), channels_last(torch::randn({2, 4, 5, 7})),
         channels_last(torch::randn({2, 37, 5, 7})), channels_last(torch::randn({2, 1, 5, 7}))},
        fused_here());
}

TEST(ChannelCat, ChannelSlicesOfAWiderTensorAreReadInPlace) {
    torch::manual_seed(2);
    const auto wide = channels_last(torch::randn({3, 40, 4, 6}));
    const auto halves = wide.chunk(2, 1);
    ASSERT_FALSE(halves[1].is_contiguous(torch::MemoryFormat::ChannelsLast));
    const auto other = channels_last(torch::randn({3, 20, 4, 6}));
    // Through autograd as C2f runs it: chunk of a tensor that requires grad.
    auto a = wide.clone().requires_grad_(true);
    auto b = wide.clone().requires_grad_(true);
    auto pa = a.chunk(2, 1), pb = b.chunk(2, 1);
    const auto y = engine::cat_channels({pa[0], pa[1], other});
    const auto expected = torch::cat({pb[0], pb[1], other}, 1);
    EXPECT_TRUE(torch::equal(y, expected));
    EXPECT_EQ(grad_name(y).find("ChannelCat") != std::string::npos, fused_here());
    const auto dy = torch::randn_like(expected);
    y.backward(dy);
    expected.backward(dy);
    EXPECT_TRUE(torch::equal(a.grad(), b.grad()));
}

TEST(ChannelCat, BatchOfOneAndOnePixel) {
    torch::manual_seed(3);
    expect_same_as_torch_cat(
        {channels_last(torch::randn({1, 16, 1, 1})), channels_last(torch::randn({1, 3, 1, 1}))},
        fused_here());
}

TEST(ChannelCat, OtherLayoutsAndTypesGoToTorchCat) {
    torch::manual_seed(4);
    // NCHW parts, double parts, a single part: torch::cat's own result.
    expect_same_as_torch_cat({torch::randn({2, 3, 4, 5}), torch::randn({2, 2, 4, 5})}, false);
    expect_same_as_torch_cat({channels_last(torch::randn({2, 16, 4, 5}, torch::kFloat64)),
                              channels_last(torch::randn({2, 16, 4, 5}, torch::kFloat64))},
                             false);
    expect_same_as_torch_cat({channels_last(torch::randn({2, 16, 4, 5}))}, false);
}

TEST(ChannelCat, ChunkChannelsEqualsChunkWithItsGradients) {
    torch::manual_seed(5);
    const auto x0 = channels_last(torch::randn({2, 32, 3, 5}));
    auto a = x0.clone().requires_grad_(true);
    auto b = x0.clone().requires_grad_(true);
    const auto ours = engine::chunk_channels(a, 2);
    const auto theirs = b.chunk(2, 1);
    ASSERT_EQ(ours.size(), 2u);
    for (int i = 0; i < 2; ++i)
        EXPECT_TRUE(torch::equal(ours[i], theirs[i])) << "chunk " << i;
    // The first a view of a, the last (which C2f convolves) a dense tensor of its own.
    EXPECT_TRUE(ours[0].is_alias_of(a));
    EXPECT_FALSE(ours[1].is_alias_of(a));
    EXPECT_TRUE(ours[1].is_contiguous(torch::MemoryFormat::ChannelsLast));
    // As C2f uses them: the second chunk feeds a block and, with the first, a concatenation.
    const auto w = torch::randn({1, 16, 1, 1});
    const auto use = [&](const std::vector<torch::Tensor>& c) {
        return torch::cat({c[0], c[1], (c[1] * w).sigmoid()}, 1).pow(2).sum();
    };
    use(ours).backward();
    use(theirs).backward();
    EXPECT_TRUE(torch::allclose(a.grad(), b.grad(), 1e-6, 1e-6));
    EXPECT_NE(ours[0].grad_fn()->name().find("ChunkChannels"), std::string::npos)
        << ours[0].grad_fn()->name();
}

TEST(ChannelCat, AnUnusedChunkGetsAZeroGradient) {
    auto a = channels_last(torch::randn({1, 32, 2, 2})).requires_grad_(true);
    const auto chunks = engine::chunk_channels(a, 2);
    chunks[1].sum().backward();
    EXPECT_EQ(a.grad().narrow(1, 0, 16).abs().sum().item<float>(), 0.0f);
    EXPECT_TRUE(torch::equal(a.grad().narrow(1, 16, 16), torch::ones({1, 16, 2, 2})));
}

// Each part's gradient with CatGrads::Dense, captured where it arrives, for the output used as
// YOLO's loss uses the head's levels: as [N, H*W, C] rows cut from a concatenation along the
// pixels, so the gradient's images lie wider apart than its own pixels (or, with `nchw`, through a
// plain NCHW copy, a gradient laid out otherwise). Compared with torch::cat's slices.
void expect_dense_grads(bool nchw) {
    torch::manual_seed(nchw ? 7 : 6);
    const std::vector<torch::Tensor> values = {channels_last(torch::randn({3, 64, 4, 5})),
                                               channels_last(torch::randn({3, 4, 4, 5}))};
    const auto other = torch::randn({3, 7, 68});
    const auto weights = torch::randn({3, 27, 68});
    const auto run = [&](bool ours, std::vector<torch::Tensor>& arrived) {
        std::vector<torch::Tensor> leaves, parts;
        arrived.assign(values.size(), torch::Tensor());
        for (std::size_t i = 0; i < values.size(); ++i) {
            leaves.push_back(values[i].clone().requires_grad_(true));
            parts.push_back(leaves.back() * 1.0f);  // not a leaf: its hook sees the gradient
            parts.back().register_hook([&arrived, i](torch::Tensor g) { arrived[i] = g; });
        }
        auto y = ours ? engine::cat_channels(parts, engine::CatGrads::Dense) : torch::cat(parts, 1);
        if (nchw) y = y.contiguous();
        const auto rows = torch::cat({y.flatten(2).transpose(1, 2), other}, 1);
        (rows * weights).sum().backward();
    };
    std::vector<torch::Tensor> ours, theirs;
    run(true, ours);
    run(false, theirs);
    for (std::size_t i = 0; i < values.size(); ++i) {
        ASSERT_TRUE(ours[i].defined()) << "part " << i;
        EXPECT_TRUE(torch::equal(ours[i], theirs[i])) << "part " << i;
        EXPECT_TRUE(ours[i].is_contiguous(torch::MemoryFormat::ChannelsLast)) << "part " << i;
        EXPECT_EQ(ours[i].storage().nbytes(), ours[i].numel() * sizeof(float)) << "part " << i;
    }
}

TEST(ChannelCat, DenseGradsAreChannelsLastTensorsOfTheirOwn) {
    expect_dense_grads(false);
}

TEST(ChannelCat, DenseGradsFromAnotherLayoutToo) {
    expect_dense_grads(true);
}

TEST(ChannelCat, MismatchedSizesFailAsTorchCatDoes) {
    const auto a = channels_last(torch::randn({2, 16, 4, 5}));
    const auto b = channels_last(torch::randn({2, 16, 4, 6}));
    EXPECT_THROW(engine::cat_channels({a, b}), c10::Error);
}

}  // namespace
