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

#ifdef CRUCIBLE_CHANNEL_CAT_AVX512
bool simd_available() {
    return cpu_features().avx512f;
}

// Pixels [begin, end) of every part, one after another, into rows of `total` floats at out.
CRUCIBLE_TARGET("avx512f")
void copy_runs(const std::vector<PixelRuns>& parts, std::int64_t total, std::int64_t begin,
               std::int64_t end, float* out) {
    for (std::int64_t p = begin; p < end; ++p) {
        float* dst = out + p * total;
        for (const PixelRuns& part : parts) {
            const float* src = part.rows.data + p * part.rows.stride;
            std::int64_t c = 0;
            for (; c + 16 <= part.channels; c += 16)
                _mm512_storeu_ps(dst + c, _mm512_loadu_ps(src + c));
            if (c < part.channels) {
                const auto mask = static_cast<__mmask16>((1u << (part.channels - c)) - 1);
                _mm512_mask_storeu_ps(dst + c, mask, _mm512_maskz_loadu_ps(mask, src + c));
            }
            dst += part.channels;
        }
    }
}
#else
bool simd_available() {
    return false;
}

void copy_runs(const std::vector<PixelRuns>&, std::int64_t, std::int64_t, std::int64_t, float*) {}
#endif

struct ChannelCatFunction : torch::autograd::Function<ChannelCatFunction> {
    // `parts` have passed fusable().
    static torch::Tensor forward(AutogradContext* ctx, at::TensorList parts) {
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
        return out;
    }

    static variable_list backward(AutogradContext* ctx, variable_list grads) {
        const auto channels = ctx->saved_data["channels"].toIntVector();
        variable_list out;
        std::int64_t offset = 0;
        for (const std::int64_t c : channels) {
            out.push_back(grads[0].defined() ? grads[0].narrow(1, offset, c) : torch::Tensor());
            offset += c;
        }
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
        return x.chunk(chunks, 1);
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

torch::Tensor cat_channels(const std::vector<torch::Tensor>& parts) {
    if (!fusable(parts)) return torch::cat(parts, 1);
    return ChannelCatFunction::apply(at::TensorList(parts));
}

}  // namespace crucible::engine
