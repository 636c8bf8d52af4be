#include "plugins/llm_lora/chat_batches.h"

#include <algorithm>

namespace crucible::llm {

std::int64_t TokenizedSample::trained_tokens() const {
    return static_cast<std::int64_t>(
        std::count_if(labels.begin(), labels.end(), [](auto l) { return l != -100; }));
}

TokenizedSample tokenize_segments(const std::vector<data::TemplateSegment>& segments,
                                  const Tokenizer& tokenizer, bool train_on_prompt) {
    TokenizedSample out;
    for (const auto& seg : segments) {
        const bool train = seg.response || train_on_prompt;
        for (auto id : tokenizer.encode(seg.text, false, true)) {
            out.ids.push_back(id);
            out.labels.push_back(train ? id : -100);
        }
    }
    return out;
}

TokenizedSample tokenize_chat(const data::ChatSample& sample, const Tokenizer& tokenizer,
                              const TokenizeOptions& options) {
    data::TemplateOptions t;
    t.eos_token = options.eos_token;
    TokenizedSample out = tokenize_segments(data::render_chat(sample, options.chat_template, t),
                                            tokenizer, options.train_on_prompt);
    if (static_cast<std::int64_t>(out.ids.size()) > options.cutoff_len) {
        out.ids.resize(static_cast<std::size_t>(options.cutoff_len));
        out.labels.resize(static_cast<std::size_t>(options.cutoff_len));
    }
    return out;
}

std::vector<TokenizedSample> pack_samples(const std::vector<TokenizedSample>& samples,
                                          std::int64_t length) {
    std::vector<TokenizedSample> out;
    TokenizedSample cur;
    for (const auto& s : samples) {
        if (!cur.ids.empty() && static_cast<std::int64_t>(cur.ids.size() + s.ids.size()) > length) {
            out.push_back(std::move(cur));
            cur = {};
        }
        cur.ids.insert(cur.ids.end(), s.ids.begin(), s.ids.end());
        cur.labels.insert(cur.labels.end(), s.labels.begin(), s.labels.end());
        if (static_cast<std::int64_t>(cur.ids.size()) > length) {
            cur.ids.resize(static_cast<std::size_t>(length));
            cur.labels.resize(static_cast<std::size_t>(length));
        }
    }
    if (!cur.ids.empty()) out.push_back(std::move(cur));
    return out;
}

TokenBatch collate(const std::vector<const TokenizedSample*>& samples, std::int64_t pad_id) {
    std::size_t longest = 1;
    for (const auto* s : samples)
        longest = std::max(longest, s->ids.size());
    const auto b = static_cast<std::int64_t>(samples.size()),
               t = static_cast<std::int64_t>(longest);
    TokenBatch batch;
    batch.tokens = torch::full({b, t}, pad_id, torch::kLong);
    batch.labels = torch::full({b, t}, -100, torch::kLong);
    auto tok = batch.tokens.accessor<std::int64_t, 2>();
    auto lab = batch.labels.accessor<std::int64_t, 2>();
    for (std::int64_t i = 0; i < b; ++i) {
        const auto& s = *samples[static_cast<std::size_t>(i)];
        for (std::size_t j = 0; j < s.ids.size(); ++j) {
            tok[i][static_cast<std::int64_t>(j)] = s.ids[j];
            lab[i][static_cast<std::int64_t>(j)] = s.labels[j];
            if (j > 0 && s.labels[j] != -100) ++batch.trained_tokens;
        }
    }
    return batch;
}

}  // namespace crucible::llm
