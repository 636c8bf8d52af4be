#include "plugins/sd_lora/text_conditioning.h"

#include <utility>

#include "core/base/error.h"

namespace crucible::sd {
namespace {

// At most this many captions are cached; past it the cache starts over (a dataset of unique,
// shuffled captions would otherwise grow it without bound).
constexpr std::size_t kMaxCachedCaptions = 4096;

}  // namespace

TextEncoders::TextEncoders(ClipTextModel first, ClipTokenizer first_tokenizer, ClipTextModel second,
                           std::optional<ClipTokenizer> second_tokenizer, int clip_skip,
                           torch::Device device)
    : first_(std::move(first)),
      second_(std::move(second)),
      first_tokenizer_(std::move(first_tokenizer)),
      second_tokenizer_(std::move(second_tokenizer)),
      clip_skip_(clip_skip),
      device_(device) {
    if (second_ && !second_tokenizer_)
        throw Error(
            "SDXL's second text encoder needs its tokenizer (sd_task gives the first's, "
            "padded with '!', when the model has none)");
}

torch::Tensor TextEncoders::ids_of(const ClipTokenizer& tokenizer, const ClipTextModelImpl& encoder,
                                   const std::vector<std::string>& captions) const {
    const auto length = static_cast<std::size_t>(encoder.config.max_position_embeddings);
    std::vector<torch::Tensor> rows;
    for (const auto& c : captions)
        rows.push_back(torch::tensor(tokenizer.encode(c, length), torch::kLong));
    return torch::stack(rows).to(device_);
}

TextConditioning TextEncoders::run(const std::vector<std::string>& captions) {
    TextConditioning out;
    const torch::Tensor ids = ids_of(first_tokenizer_, *first_, captions);
    if (!sdxl()) {
        out.context = first_->forward(ids, clip_skip_);
        return out;
    }
    const auto one = first_->encode_sdxl(ids, /*with_pooled=*/false);
    const auto two = second_->encode_sdxl(ids_of(*second_tokenizer_, *second_, captions),
                                          /*with_pooled=*/true);
    out.context = torch::cat({one.penultimate, two.penultimate}, -1);
    out.pooled = two.pooled;
    return out;
}

TextConditioning TextEncoders::encode(const std::vector<std::string>& captions) {
    if (trainable_) return run(captions);
    std::vector<torch::Tensor> contexts, pooled;
    for (const auto& c : captions) {
        auto it = cache_.find(c);
        if (it == cache_.end()) {
            if (cache_.size() >= kMaxCachedCaptions) cache_.clear();
            torch::NoGradGuard no_grad;
            it = cache_.emplace(c, run({c})).first;
        }
        contexts.push_back(it->second.context[0]);
        if (it->second.pooled.defined()) pooled.push_back(it->second.pooled[0]);
    }
    TextConditioning out;
    out.context = torch::stack(contexts);
    if (!pooled.empty()) out.pooled = torch::stack(pooled);
    return out;
}

TextConditioning TextEncoders::unconditional(std::int64_t batch) {
    if (!sdxl()) return encode(std::vector<std::string>(static_cast<std::size_t>(batch), ""));
    const TextConditioning shape = encode({""});
    TextConditioning out;
    out.context = torch::zeros_like(shape.context).expand({batch, -1, -1}).contiguous();
    out.pooled = torch::zeros_like(shape.pooled).expand({batch, -1}).contiguous();
    return out;
}

}  // namespace crucible::sd
