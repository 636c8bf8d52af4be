#pragma once
// Tokenized chat samples for training: the template's text tokenized segment by segment, labels
// -100 outside the responses (unless the prompt is trained too), cut to cutoff_len, optionally
// packed, and batches padded on the right (causal attention never looks at the padding).
#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/data/chat_dataset.h"
#include "core/data/chat_template.h"
#include "plugins/llm_lora/tokenizer.h"

namespace crucible::llm {

struct TokenizedSample {
    std::vector<std::int64_t> ids;
    std::vector<std::int64_t> labels;  // -100: no loss
    std::int64_t trained_tokens() const;
};

struct TokenizeOptions {
    data::ChatTemplate chat_template = data::ChatTemplate::Llama3;
    std::int64_t cutoff_len = 1024;
    bool train_on_prompt = false;
    std::string eos_token = "</s>";  // alpaca's end-of-text marker
};

// Rendered template segments as ids, labelled where the loss trains (response segments, or
// every segment with `train_on_prompt`).
TokenizedSample tokenize_segments(const std::vector<data::TemplateSegment>& segments,
                                  const Tokenizer& tokenizer, bool train_on_prompt);

// One sample; its ids and labels have equal length (<= cutoff_len).
TokenizedSample tokenize_chat(const data::ChatSample& sample, const Tokenizer& tokenizer,
                              const TokenizeOptions& options);

// Concatenates samples in order into sequences of at most `length` tokens (a sample that does
// not fit starts the next sequence).
std::vector<TokenizedSample> pack_samples(const std::vector<TokenizedSample>& samples,
                                          std::int64_t length);

struct TokenBatch {
    torch::Tensor tokens;  // [B, T] int64
    torch::Tensor labels;  // [B, T] int64, -100 where no loss
    // Positions the shifted next-token loss scores (labels[:, 1:] != -100): the weight of this
    // batch in a token-weighted mean.
    std::int64_t trained_tokens = 0;
};
TokenBatch collate(const std::vector<const TokenizedSample*>& samples, std::int64_t pad_id);

}  // namespace crucible::llm
