#include "plugins/llm_lora/rotary.h"

#include "core/base/error.h"

namespace crucible::llm {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// out1 = x1 * cos - x2 * sin, out2 = x2 * cos + x1 * sin, with sign = -1 the inverse rotation.
// cos and sin arrive as [T, 1, D/2], broadcast over batch and heads.
torch::Tensor rotate(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                     double sign) {
    const std::int64_t half = x.size(-1) / 2;
    const torch::Tensor x1 = x.narrow(-1, 0, half), x2 = x.narrow(-1, half, half);
    torch::Tensor out = torch::empty_like(x, torch::MemoryFormat::Contiguous);
    torch::Tensor out1 = out.narrow(-1, 0, half), out2 = out.narrow(-1, half, half);
    at::mul_out(out1, x1, cos).addcmul_(x2, sin, -sign);
    at::mul_out(out2, x2, cos).addcmul_(x1, sin, sign);
    return out;
}

struct RotaryFunction : torch::autograd::Function<RotaryFunction> {
    static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x,
                                 const torch::Tensor& cos, const torch::Tensor& sin) {
        ctx->save_for_backward({cos, sin});
        return rotate(x, cos, sin, 1.0);
    }

    static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
        const auto saved = ctx->get_saved_variables();
        // rotate() reads any strides: the gradient, often a transposed view, is not copied first.
        return {rotate(grad_outputs[0], saved[0], saved[1], -1.0), torch::Tensor(),
                torch::Tensor()};
    }
};

}  // namespace

torch::Tensor apply_rotary(const torch::Tensor& x, const torch::Tensor& cos,
                           const torch::Tensor& sin) {
    if (x.dim() != 4 || x.size(-1) % 2 != 0 || cos.dim() != 2 || cos.sizes() != sin.sizes() ||
        cos.size(0) != x.size(1) || 2 * cos.size(1) != x.size(-1))
        throw Error(
            "apply_rotary: x [B, T, heads, D] with an even D and cos, sin [T, D/2] expected");
    const torch::Tensor c = cos.detach().unsqueeze(1), s = sin.detach().unsqueeze(1);
    return RotaryFunction::apply(x, c, s);
}

}  // namespace crucible::llm
