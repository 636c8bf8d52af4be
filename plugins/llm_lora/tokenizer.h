#pragma once
// Tokenizers of Llama-family models (SPECS.md "Llama-family decoder"):
// - `tokenizer.json` (Hugging Face tokenizers): normalizers (Sequence, Prepend, Replace, NFC,
//   NFKC, Lowercase, Strip), pre-tokenizers (Sequence, Split, ByteLevel, Metaspace, Digits,
//   Whitespace, WhitespaceSplit) with PCRE2 as the Unicode-aware regex engine, a BPE model
//   (merges by rank, ignore_merges, byte fallback, unk fusing), added / special tokens,
//   TemplateProcessing post-processors; own implementation.
// - `tokenizer.model` (SentencePiece model proto, Llama 1/2, Mistral): libsentencepiece loads,
//   normalizes (the model's own character map), encodes and decodes; our layer on top splits
//   special pieces out of the text, adds BOS, decodes special pieces as text and turns every
//   refusal, a hostile file's included, into an InputError (plugins/llm_lora/README.md).
//   load_tokenizer prefers tokenizer.json when a folder has both.
// Text must be valid UTF-8; anything else is an InputError.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace crucible::llm {

class Tokenizer {
  public:
    virtual ~Tokenizer() = default;
    // Ids of `text`. Added / special tokens written in the text (`<|eot_id|>`, `<s>`) become
    // their ids when `parse_special` is true, otherwise they are tokenized as plain text.
    // `add_special` adds what the tokenizer's post-processor adds (BOS for Llama 2).
    virtual std::vector<std::int64_t> encode(std::string_view text, bool add_special = false,
                                             bool parse_special = true) const = 0;
    virtual std::string decode(const std::vector<std::int64_t>& ids,
                               bool skip_special = false) const = 0;
    virtual std::int64_t vocab_size() const = 0;
    // Id of a token string (vocabulary or added token), nullopt when unknown.
    virtual std::optional<std::int64_t> token_id(std::string_view token) const = 0;
    // The token string of an id ("" when out of range).
    virtual std::string token_text(std::int64_t id) const = 0;
    virtual std::string kind() const = 0;  // "tokenizer.json" / "sentencepiece"

    // From tokenizer_config.json: ends generations and closes chat turns.
    std::optional<std::int64_t> eos_id;
    std::string eos_token;
    // The model's Jinja chat template ("" when the config has none); template=auto reads it.
    std::string chat_template;
};

// tokenizer.json text. `where` names it in errors; `config_json` is the text of
// tokenizer_config.json (bos/eos tokens) or empty.
std::unique_ptr<Tokenizer> make_hf_tokenizer(std::string_view json_text, const std::string& where,
                                             std::string_view config_json = {});
// tokenizer.model bytes (SentencePiece model proto).
std::unique_ptr<Tokenizer> make_sentencepiece_tokenizer(std::string_view model_bytes,
                                                        const std::string& where);

// A folder with tokenizer.json (preferred) or tokenizer.model, or one of those files.
std::unique_ptr<Tokenizer> load_tokenizer(const std::filesystem::path& path);

}  // namespace crucible::llm
