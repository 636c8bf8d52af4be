#include "core/engine/nf4.h"

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <type_traits>
#include <utility>

#include "core/base/error.h"
#include "core/engine/nf4_simd.h"

namespace crucible::engine {
namespace {

// The code tables on a device, made once per device: dequantizing runs in every forward and
// backward, and a fresh host-to-device copy there would wait for the GPU each time.
struct CodeTables {
    torch::Tensor nf4;      // [16] fp32
    torch::Tensor pairs;    // [256, 2]: the two levels of each byte (high nibble, low nibble)
    torch::Tensor dynamic;  // [256] the 8-bit dynamic code of the block maxima
};

const CodeTables& tables_on(torch::Device device) {
    static std::mutex mutex;
    static std::map<std::pair<int, int>, CodeTables> by_device;
    std::lock_guard<std::mutex> lock(mutex);
    const std::pair<int, int> key{static_cast<int>(device.type()), device.index()};
    auto it = by_device.find(key);
    if (it == by_device.end()) {
        const auto& l = nf4_levels();
        CodeTables t;
        t.nf4 = torch::from_blob(const_cast<float*>(l.data()), {16}, torch::kFloat32)
                    .to(device, /*non_blocking=*/false, /*copy=*/true);
        t.pairs = torch::stack({t.nf4.repeat_interleave(16), t.nf4.repeat(16)}, 1);
        t.dynamic = dynamic_code_levels().to(device);
        it = by_device.emplace(key, std::move(t)).first;
    }
    return it->second;
}

torch::Tensor nf4_table(torch::Device device) {
    return tables_on(device).nf4;
}

// Index of the nearest level of `levels` (ascending) for each value of `x`: the count of
// midpoints below it.
torch::Tensor nearest_level(const torch::Tensor& x, const torch::Tensor& levels) {
    const torch::Tensor mid =
        (levels.narrow(0, 0, levels.size(0) - 1) + levels.narrow(0, 1, levels.size(0) - 1)) / 2;
    return torch::bucketize(x, mid, /*out_int32=*/true);
}

// Scales of `values` [blocks·size] padded with zeros, by block: (values / absmax, absmax); a
// block of zeros keeps scale 0 and normalized values 0.
std::pair<torch::Tensor, torch::Tensor> normalize_blocks(const torch::Tensor& values,
                                                         std::int64_t size) {
    const std::int64_t n = values.numel();
    const std::int64_t blocks = (n + size - 1) / size;
    torch::Tensor padded = values;
    if (blocks * size != n)
        padded = torch::cat({values, torch::zeros({blocks * size - n}, values.options())});
    padded = padded.view({blocks, size});
    const torch::Tensor absmax = padded.abs().amax(1);
    const torch::Tensor safe = torch::where(absmax > 0, absmax, torch::ones_like(absmax));
    return {padded / safe.unsqueeze(1), absmax};
}

struct Nf4LinearFunction : torch::autograd::Function<Nf4LinearFunction> {
    static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                                 const torch::Tensor& packed, const torch::Tensor& absmax_codes,
                                 const torch::Tensor& absmax_scales,
                                 const torch::Tensor& absmax_offset,
                                 std::vector<std::int64_t> shape, std::int64_t dtype) {
        Nf4Tensor w{packed,        absmax_codes, absmax_scales,
                    absmax_offset, shape,        static_cast<torch::ScalarType>(dtype)};
        ctx->save_for_backward({packed, absmax_codes, absmax_scales, absmax_offset});
        ctx->saved_data["shape"] = shape;
        ctx->saved_data["dtype"] = dtype;
        return torch::nn::functional::linear(x, w.dequantize().to(x.scalar_type()));
    }

    static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                   torch::autograd::variable_list grads) {
        const auto saved = ctx->get_saved_variables();
        Nf4Tensor w{saved[0],
                    saved[1],
                    saved[2],
                    saved[3],
                    ctx->saved_data["shape"].toIntVector(),
                    static_cast<torch::ScalarType>(ctx->saved_data["dtype"].toInt())};
        const torch::Tensor& g = grads[0];
        return {torch::matmul(g, w.dequantize().to(g.scalar_type())), {}, {}, {}, {}, {}, {}};
    }
};

}  // namespace

const std::array<float, 16>& nf4_levels() {
    // The published table (QLoRA, Appendix E), as fp32.
    static const std::array<float, 16> levels{-1.0f,
                                              -0.6961928009986877f,
                                              -0.5250730514526367f,
                                              -0.39491748809814453f,
                                              -0.28444138169288635f,
                                              -0.18477343022823334f,
                                              -0.09105003625154495f,
                                              0.0f,
                                              0.07958029955625534f,
                                              0.16093020141124725f,
                                              0.24611230194568634f,
                                              0.33791524171829224f,
                                              0.44070982933044434f,
                                              0.5626170039176941f,
                                              0.7229568362236023f,
                                              1.0f};
    return levels;
}

torch::Tensor dynamic_code_levels() {
    // Built once (dequantize asks for it on every forward); callers get the shared CPU tensor.
    static const torch::Tensor built = [] {
        std::vector<float> levels{0.0f, 1.0f};
        for (int k = 0; k <= 6; ++k) {
            const std::int64_t steps = std::int64_t{1} << k;
            // The step boundaries in fp32, as the reference computes them, then their midpoints.
            const torch::Tensor bounds = torch::linspace(0.1, 1.0, steps + 1, torch::kFloat32);
            const torch::Tensor mids =
                (bounds.narrow(0, 0, steps) + bounds.narrow(0, 1, steps)) / 2;
            const torch::Tensor values = mids * static_cast<float>(std::pow(10.0, k - 6));
            for (std::int64_t i = 0; i < steps; ++i) {
                levels.push_back(values[i].item<float>());
                levels.push_back(-values[i].item<float>());
            }
        }
        torch::Tensor t = torch::tensor(levels, torch::kFloat32);
        return std::get<0>(t.sort());
    }();
    return built;
}

std::int64_t Nf4Tensor::numel() const {
    std::int64_t n = 1;
    for (auto d : shape)
        n *= d;
    return n;
}

std::int64_t Nf4Tensor::storage_bytes() const {
    if (!defined()) return 0;
    return packed.numel() + absmax_codes.numel() + 4 * absmax_scales.numel() + 4;
}

Nf4Tensor Nf4Tensor::allocate(const std::vector<std::int64_t>& shape, torch::ScalarType dtype,
                              torch::Device device) {
    Nf4Tensor out;
    out.shape = shape;
    out.dtype = dtype;
    const std::int64_t n = out.numel();
    if (n <= 0) throw Error("nf4: an empty weight does not quantize");
    const std::int64_t blocks = (n + kNf4BlockSize - 1) / kNf4BlockSize;
    const auto bytes = torch::TensorOptions().dtype(torch::kUInt8).device(device);
    const auto floats = torch::TensorOptions().dtype(torch::kFloat32).device(device);
    out.packed = torch::empty({(n + 1) / 2}, bytes);
    out.absmax_codes = torch::empty({blocks}, bytes);
    out.absmax_scales =
        torch::empty({(blocks + kNf4AbsmaxBlockSize - 1) / kNf4AbsmaxBlockSize}, floats);
    out.absmax_offset = torch::empty({}, floats);
    return out;
}

Nf4Tensor Nf4Tensor::quantize(const torch::Tensor& weight) {
    if (!weight.is_floating_point()) throw Error("nf4: only floating-point weights quantize");
    Nf4Tensor out = allocate(weight.sizes().vec(), weight.scalar_type(), weight.device());
    out.assign(weight);
    return out;
}

void Nf4Tensor::assign(const torch::Tensor& weight) {
    if (!weight.is_floating_point()) throw Error("nf4: only floating-point weights quantize");
    if (weight.sizes().vec() != shape || !packed.defined())
        throw Error("nf4: the weight's shape differs from the storage's");
    torch::NoGradGuard no_grad;
    dtype = weight.scalar_type();
    const torch::Tensor flat = weight.detach().reshape({-1});
    const std::int64_t n = flat.numel();
    const std::int64_t blocks = absmax_codes.numel();
    const torch::Tensor table = nf4_table(packed.device());
    torch::Tensor absmax = torch::empty(
        {blocks}, torch::TensorOptions().dtype(torch::kFloat32).device(packed.device()));
    // A million values at a time (whole blocks, so an even count but for the last): the
    // scratch stays a few MB whatever the weight, and the same sizes come back every chunk.
    constexpr std::int64_t kChunkBlocks = 16384;
    for (std::int64_t b0 = 0; b0 < blocks; b0 += kChunkBlocks) {
        const std::int64_t v0 = b0 * kNf4BlockSize;
        const std::int64_t count = std::min(kChunkBlocks * kNf4BlockSize, n - v0);
        auto [normalized, chunk_absmax] =
            normalize_blocks(flat.narrow(0, v0, count).to(torch::kFloat32), kNf4BlockSize);
        absmax.narrow(0, b0, chunk_absmax.size(0)).copy_(chunk_absmax);
        torch::Tensor idx =
            nearest_level(normalized.reshape({-1}).narrow(0, 0, count), table).to(torch::kUInt8);
        if (count % 2 != 0) idx = torch::cat({idx, torch::zeros({1}, idx.options())});
        idx = idx.view({-1, 2});
        packed.narrow(0, v0 / 2, idx.size(0))
            .copy_(torch::bitwise_or(torch::bitwise_left_shift(idx.select(1, 0), 4),
                                     idx.select(1, 1)));
    }

    absmax_offset.copy_(absmax.mean());
    const torch::Tensor centered = absmax - absmax_offset;
    auto [normalized2, scales] = normalize_blocks(centered, kNf4AbsmaxBlockSize);
    absmax_codes.copy_(nearest_level(normalized2.reshape({-1}).narrow(0, 0, blocks),
                                     tables_on(packed.device()).dynamic));
    absmax_scales.copy_(scales);
}

torch::Tensor Nf4Tensor::absmax() const {
    const std::int64_t blocks = absmax_codes.numel();
    const torch::Tensor& levels = tables_on(absmax_codes.device()).dynamic;
    const torch::Tensor scale =
        absmax_scales.repeat_interleave(kNf4AbsmaxBlockSize).narrow(0, 0, blocks);
    return levels.index_select(0, absmax_codes.to(torch::kLong)) * scale + absmax_offset;
}

namespace {

// The CPU path: one pass over the codes, straight into the output dtype, in parallel over
// blocks (no index tensors or fp32 scratch as large as the weight: the ops path below costs
// several passes over memory, and a QLoRA step dequantizes every projection twice).
template <typename T>
void dequantize_cpu(const std::uint8_t* packed, const float* absmax, std::int64_t n, T* out) {
    const auto& levels = nf4_levels();
    const std::int64_t blocks = (n + kNf4BlockSize - 1) / kNf4BlockSize;
    const std::int64_t whole = n / kNf4BlockSize;  // blocks of 64 values, for the SIMD path
    constexpr bool kSimd = std::is_same_v<T, float> || std::is_same_v<T, c10::BFloat16>;
    at::parallel_for(0, blocks, 256, [&](std::int64_t begin, std::int64_t end) {
        if constexpr (kSimd) {
            const std::int64_t simd_end = std::min(end, whole);
            if (begin < simd_end &&
                nf4_blocks_avx512(packed, absmax, levels.data(), begin, simd_end, out,
                                  std::is_same_v<T, c10::BFloat16>))
                begin = simd_end;
        }
        T scaled[16];
        for (std::int64_t b = begin; b < end; ++b) {
            // The block's 16 values, each level times the block's scale (the same product the
            // ops path takes per value), then plain lookups.
            for (std::size_t k = 0; k < 16; ++k)
                scaled[k] = static_cast<T>(levels[k] * absmax[b]);
            const std::int64_t first = b * kNf4BlockSize;
            const std::int64_t last = std::min(first + kNf4BlockSize, n);
            const std::uint8_t* bytes = packed + first / 2;
            T* o = out + first;
            const std::int64_t pairs = (last - first) / 2;
            for (std::int64_t j = 0; j < pairs; ++j) {
                o[2 * j] = scaled[bytes[j] >> 4];
                o[2 * j + 1] = scaled[bytes[j] & 15];
            }
            if ((last - first) % 2 != 0) o[2 * pairs] = scaled[bytes[pairs] >> 4];
        }
    });
}

}  // namespace

torch::Tensor Nf4Tensor::dequantize() const {
    if (!defined()) throw Error("nf4: dequantize of an empty tensor");
    const std::int64_t n = numel();
    const torch::Tensor scales = absmax().contiguous();
    if (packed.is_cpu()) {
        torch::Tensor out = torch::empty({n}, torch::TensorOptions().dtype(dtype));
        const torch::Tensor codes = packed.contiguous();
        AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, dtype, "nf4_dequantize", [&] {
            dequantize_cpu<scalar_t>(codes.data_ptr<std::uint8_t>(), scales.data_ptr<float>(), n,
                                     out.data_ptr<scalar_t>());
        });
        return out.view(shape);
    }
    return dequantize_in_ops();
}

torch::Tensor Nf4Tensor::dequantize_in_ops() const {
    const std::int64_t n = numel();
    const std::int64_t blocks = absmax_codes.numel();
    const torch::Tensor scales = absmax();
    // Each byte looks up its two levels at once.
    const torch::Tensor& pairs = tables_on(packed.device()).pairs;
    torch::Tensor values = pairs.index_select(0, packed.to(torch::kInt)).reshape({-1});
    if (values.numel() != blocks * kNf4BlockSize)
        values = torch::cat(
            {values, torch::zeros({blocks * kNf4BlockSize - values.numel()}, values.options())});
    values = values.view({blocks, kNf4BlockSize}).mul_(scales.unsqueeze(1));
    return values.reshape({-1}).narrow(0, 0, n).view(shape).to(dtype);
}

torch::Tensor nf4_linear(const torch::Tensor& x, const Nf4Tensor& weight,
                         const torch::Tensor& bias) {
    if (weight.shape.size() != 2 || x.size(-1) != weight.shape[1])
        throw Error("nf4_linear: input width does not match the weight");
    torch::Tensor y = Nf4LinearFunction::apply(
        x, weight.packed, weight.absmax_codes, weight.absmax_scales, weight.absmax_offset,
        weight.shape, static_cast<std::int64_t>(weight.dtype));
    return bias.defined() ? y + bias.to(y.scalar_type()) : y;
}

}  // namespace crucible::engine
