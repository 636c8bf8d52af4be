#pragma once
// 4-bit NormalFloat (NF4) weights with double quantization, the storage of QLoRA (Dettmers et
// al. 2023, "QLoRA: Efficient Finetuning of Quantized LLMs"), laid out as bitsandbytes lays it out
// so that its files and ours agree code for code:
// - the weight, flattened, in blocks of 64 values; each block is scaled by its absolute maximum
//   and every value becomes the index (0-15) of the nearest of the 16 NF4 levels;
// - two indices a byte, the first value in the high nibble;
// - the block maxima (one fp32 a block) quantized a second time: their mean is taken out, then
//   in blocks of 256 each is scaled by its block's absolute maximum (fp32) and stored as the
//   index of the nearest of the 256 levels of the signed 8-bit dynamic code.
// Weight memory: 4 bits a value plus 8 bits a 64-block plus 32 bits a 16384 values, about
// 4.127 bits a weight against 16 in bf16.
//
// Dequantizing is plain LibTorch ops (an index lookup and a multiply), so it runs wherever the
// codes are: on the CPU here, on CUDA on the GPU machine. nf4_linear keeps only the codes for
// backward and dequantizes again there: a frozen base layer never holds its full weight beyond
// one matmul.
#include <torch/torch.h>

#include <array>
#include <cstdint>
#include <vector>

namespace crucible::engine {

inline constexpr std::int64_t kNf4BlockSize = 64;
inline constexpr std::int64_t kNf4AbsmaxBlockSize = 256;

// The 16 NF4 levels in ascending order, -1 .. 1 with an exact zero (QLoRA, Appendix E): the
// quantiles of a standard normal, 8 for the positive side and 7 for the negative, scaled to
// [-1, 1].
const std::array<float, 16>& nf4_levels();
// The 256 levels of the signed 8-bit dynamic code the block maxima are stored in ("8-bit
// Optimizers via Block-wise Quantization", Dettmers et al. 2022): for k = 0..6, 2^k values
// 10^(k-6)·m, where m runs over the midpoints of 2^k equal steps from 0.1 to 1, each with both
// signs; plus 0 and 1; in ascending order (fp32).
torch::Tensor dynamic_code_levels();

struct Nf4Tensor {
    torch::Tensor packed;         // uint8 [ceil(n / 2)]
    torch::Tensor absmax_codes;   // uint8 [blocks]
    torch::Tensor absmax_scales;  // fp32 [ceil(blocks / 256)]
    torch::Tensor absmax_offset;  // fp32 scalar: the mean taken out of the block maxima
    std::vector<std::int64_t> shape;
    torch::ScalarType dtype = torch::kFloat32;  // what dequantize() returns

    bool defined() const { return packed.defined(); }
    std::int64_t numel() const;
    // Bytes the codes and constants take.
    std::int64_t storage_bytes() const;

    // `weight` (any float dtype and device) quantized on its device; dequantize() returns
    // `weight`'s shape and dtype.
    static Nf4Tensor quantize(const torch::Tensor& weight);
    // The same in two steps: storage for a weight of `shape`, then assign() fills it. A loader
    // allocates the codes (which live on) before it reads the dense weight (which does not), so
    // that the freed dense weight and the quantizer's scratch sit above the codes in the heap
    // and the next weight reuses them: quantizing tensor by tensor then never grows the
    // process by more than one dense weight (glibc keeps freed memory that a later, live
    // allocation pins).
    static Nf4Tensor allocate(const std::vector<std::int64_t>& shape, torch::ScalarType dtype,
                              torch::Device device);
    void assign(const torch::Tensor& weight);
    // The block maxima as the codes give them back (fp32 [blocks]).
    torch::Tensor absmax() const;
    torch::Tensor dequantize() const;
    // The path dequantize() takes off the CPU (CUDA): LibTorch ops only. On the CPU it takes
    // a loop of its own, one pass into the output dtype; tests hold the two equal.
    torch::Tensor dequantize_in_ops() const;
};

// x [..., in] · Wᵀ with W = weight.dequantize() ([out, in]), plus `bias` when defined. The
// weight takes no gradient; x does, and backward dequantizes W again instead of keeping it.
torch::Tensor nf4_linear(const torch::Tensor& x, const Nf4Tensor& weight,
                         const torch::Tensor& bias = {});

}  // namespace crucible::engine
