#pragma once
// What the UNet is conditioned on, from captions: SD 1.x's text states (one CLIP encoder, its
// clip_skip-th last layer through the final norm), or SDXL's (both encoders' next-to-last layers
// without the final norm side by side, and the second encoder's pooled, projected output, each
// encoder fed by its own tokenizer). Cached per caption while the encoders are frozen; with their
// LoRA training, one batched forward with gradients every step.
#include <torch/torch.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "plugins/sd_lora/clip_text.h"
#include "plugins/sd_lora/clip_tokenizer.h"

namespace crucible::sd {

struct TextConditioning {
    torch::Tensor context;  // [B, T, cross_attention_dim]
    torch::Tensor pooled;   // [B, projection_dim] for SDXL; undefined for SD 1.x
};

class TextEncoders {
  public:
    // `second` / `second_tokenizer`: SDXL's second encoder and its tokenizer (nullptr / nullopt
    // for SD 1.x; the encoder needs its tokenizer). `clip_skip` applies to SD 1.x only.
    TextEncoders(ClipTextModel first, ClipTokenizer first_tokenizer, ClipTextModel second,
                 std::optional<ClipTokenizer> second_tokenizer, int clip_skip,
                 torch::Device device);

    bool sdxl() const { return static_cast<bool>(second_); }
    // Whether LoRA trains on the encoders: then every call runs them with gradients.
    void set_trainable(bool trainable) { trainable_ = trainable; }

    TextConditioning encode(const std::vector<std::string>& captions);
    // SDXL's unconditional input at sampling: zeros (the base model's
    // force_zeros_for_empty_prompt); SD 1.x's: the empty caption.
    TextConditioning unconditional(std::int64_t batch);

  private:
    TextConditioning run(const std::vector<std::string>& captions);
    torch::Tensor ids_of(const ClipTokenizer& tokenizer, const ClipTextModelImpl& encoder,
                         const std::vector<std::string>& captions) const;

    ClipTextModel first_, second_;
    ClipTokenizer first_tokenizer_;
    std::optional<ClipTokenizer> second_tokenizer_;
    int clip_skip_ = 1;
    torch::Device device_;
    bool trainable_ = false;
    std::map<std::string, TextConditioning> cache_;  // one row per caption, while frozen
};

}  // namespace crucible::sd
