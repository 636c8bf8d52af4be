#include "core/engine/channel_cat.h"

#include <ATen/Parallel.h>

#include <cstdint>

#include "core/base/cpu_features.h"
#include "core/engine/channel_rows.h"
#include "core/engine/fused_kernels.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define CRUCIBLE_CHANNEL_CAT_AVX512 1
#endif

namespace crucible::engine {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Pixels between which the copy splits its work.
constexpr std::int64_t kPixelGrain = 512;

// One input's rows (channel_rows.h) and its channel count.
struct PixelRuns {
    ChannelRows rows;
    std::int64_t channels = 0;
};

// A dense channels-last output: pixel p's channels at data + p * channels.
struct DenseRows {
    float* data = nullptr;
    std::int64_t channels = 0;
};

#ifdef CRUCIBLE_CHANNEL_CAT_AVX512
bool simd_available() {
    return cpu_features().avx512f;
}

// n floats from src to dst, 16 at a time and the rest under a mask.
CRUCIBLE_TARGET("avx512f") inline void copy_run(const float* src, std::int64_t n, float* dst) {
    std::int64_t c = 0;
    for (; c + 16 <= n; c += 16)
        _mm512_storeu_ps(dst + c, _mm512_loadu_ps(src + c));
    if (c < n) {
        const auto mask = static_cast<__mmask16>((1u << (n - c)) - 1);
        _mm512_mask_storeu_ps(dst + c, mask, _mm512_maskz_loadu_ps(mask, src + c));
    }
}

// Pixels [begin, end) of every part, one after another, into rows of `total` floats at out.
CRUCIBLE_TARGET("avx512f")
void copy_runs(const std::vector<PixelRuns>& parts, std::int64_t total, std::int64_t begin,
               std::int64_t end, float* out) {
    for (std::int64_t p = begin; p < end; ++p) {
        float* dst = out + p * total;
        for (const PixelRuns& part : parts) {
            copy_run(part.rows.data + p * part.rows.stride, part.channels, dst);
            dst += part.channels;
        }
    }
}

// The reverse for pixels [begin, end): each pixel's run of every part, from rows of `total`
// floats (image n's pixel q at src + n * image_stride + q * total), into the parts' own dense
// rows.
CRUCIBLE_TARGET("avx512f")
void split_runs(const float* src, std::int64_t image_stride, std::int64_t pixels_per_image,
                std::int64_t total, const std::vector<DenseRows>& parts, std::int64_t begin,
                std::int64_t end) {
    for (std::int64_t p = begin; p < end; ++p) {
        const float* in =
            src + (p / pixels_per_image) * image_stride + (p % pixels_per_image) * total;
        for (const DenseRows& part : parts) {
            copy_run(in, part.channels, part.data + p * part.channels);
            in += part.channels;
        }
    }
}
#else
bool simd_available() {
    return false;
}

void copy_runs(const std::vector<PixelRuns>&, std::int64_t, std::int64_t, std::int64_t, float*) {}
void split_runs(const float*, std::int64_t, std::int64_t, std::int64_t,
                const std::vector<DenseRows>&, std::int64_t, std::int64_t) {}
#endif

// Whether each image of `t` (4-D float) is rows of its channels, one pixel after another with
// nothing between them; the images themselves may lie anywhere (a slice of the anchors of
// YOLO's loss, whose levels are cut from one tensor, has a wider image stride).
bool images_are_dense_rows(const torch::Tensor& t) {
    const std::int64_t c = t.size(1), h = t.size(2), w = t.size(3);
    return t.scalar_type() == torch::kFloat32 && t.device().is_cpu() &&
           (c == 1 || t.stride(1) == 1) && (w == 1 || t.stride(3) == c) &&
           (h == 1 || t.stride(2) == w * c);
}

// Each part's channels of `grad`, as channels-last tensors of their own.
variable_list dense_parts(const torch::Tensor& grad, const std::vector<std::int64_t>& channels) {
    variable_list out;
    if (!simd_available() || !images_are_dense_rows(grad)) {
        std::int64_t offset = 0;
        for (const std::int64_t c : channels) {
            out.push_back(grad.narrow(1, offset, c).contiguous(torch::MemoryFormat::ChannelsLast));
            offset += c;
        }
        return out;
    }
    std::vector<DenseRows> parts;
    for (const std::int64_t c : channels) {
        out.push_back(
            torch::empty({grad.size(0), c, grad.size(2), grad.size(3)},
                         grad.options().memory_format(torch::MemoryFormat::ChannelsLast)));
        parts.push_back({out.back().data_ptr<float>(), c});
    }
    const std::int64_t per_image = grad.size(2) * grad.size(3);
    const float* src = grad.data_ptr<float>();
    const std::int64_t image_stride = grad.stride(0), total = grad.size(1);
    at::parallel_for(0, grad.size(0) * per_image, kPixelGrain, [&](std::int64_t b, std::int64_t e) {
        split_runs(src, image_stride, per_image, total, parts, b, e);
    });
    return out;
}

struct ChannelCatFunction : torch::autograd::Function<ChannelCatFunction> {
    // `parts` have passed fusable().
    static torch::Tensor forward(AutogradContext* ctx, at::TensorList parts, bool dense_grads) {
        std::vector<PixelRuns> runs;
        std::vector<std::int64_t> channels;
        std::int64_t total = 0;
        for (const auto& part : parts) {
            runs.push_back({channel_rows_of(part), part.size(1)});
            channels.push_back(part.size(1));
            total += part.size(1);
        }
        const auto& first = parts.front();
        auto out = torch::empty({first.size(0), total, first.size(2), first.size(3)},
                                first.options().memory_format(torch::MemoryFormat::ChannelsLast));
        float* dst = out.data_ptr<float>();
        at::parallel_for(
            0, first.size(0) * first.size(2) * first.size(3), kPixelGrain,
            [&](std::int64_t b, std::int64_t e) { copy_runs(runs, total, b, e, dst); });
        ctx->saved_data["channels"] = channels;
        ctx->saved_data["dense_grads"] = dense_grads;
        return out;
    }

    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        const auto channels = ctx->saved_data["channels"].toIntVector();
        if (grads[0].defined() && ctx->saved_data["dense_grads"].toBool()) {
            variable_list out = dense_parts(grads[0], channels);
            out.push_back(torch::Tensor());  // dense_grads
            return out;
        }
        variable_list out;
        std::int64_t offset = 0;
        for (const std::int64_t c : channels) {
            out.push_back(grads[0].defined() ? grads[0].narrow(1, offset, c) : torch::Tensor());
            offset += c;
        }
        out.push_back(torch::Tensor());  // dense_grads
        return out;
    }
};

bool fusable(const std::vector<torch::Tensor>& parts) {
    if (parts.size() < 2 || !fused_cpu_kernels_enabled() || !simd_available()) return false;
    const auto& first = parts.front();
    if (first.dim() != 4) return false;
    for (const auto& part : parts) {
        if (part.dim() != 4 || !part.device().is_cpu() || part.scalar_type() != torch::kFloat32 ||
            part.size(0) != first.size(0) || part.size(2) != first.size(2) ||
            part.size(3) != first.size(3) || part.size(1) == 0 || part.numel() == 0 ||
            channel_rows_of(part).data == nullptr)
            return false;
    }
    return true;
}

struct ChunkChannelsFunction : torch::autograd::Function<ChunkChannelsFunction> {
    static variable_list forward(AutogradContext*, const torch::Tensor& x, std::int64_t chunks) {
        variable_list out = x.chunk(chunks, 1);
        out.back() = out.back().contiguous(x.suggest_memory_format());
        return out;
    }

    // Gradients of unused chunks arrive as zeros (materialised by autograd).
    static variable_list backward(AutogradContext*, variable_list grads) {
        return {cat_channels(std::vector<torch::Tensor>(grads.begin(), grads.end())),
                torch::Tensor()};
    }
};

}  // namespace

std::vector<torch::Tensor> chunk_channels(const torch::Tensor& x, std::int64_t chunks) {
    if (!fused_cpu_kernels_enabled() || x.dim() != 4 || chunks < 2 || x.size(1) % chunks != 0 ||
        !x.requires_grad())
        return x.chunk(chunks, 1);
    return ChunkChannelsFunction::apply(x, chunks);
}

torch::Tensor cat_channels(const std::vector<torch::Tensor>& parts, CatGrads grads) {
    if (!fusable(parts)) return torch::cat(parts, 1);
    return ChannelCatFunction::apply(at::TensorList(parts), grads == CatGrads::Dense);
}

}  // namespace crucible::engine
