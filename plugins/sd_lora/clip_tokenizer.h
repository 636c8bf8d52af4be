#pragma once
// The CLIP BPE tokenizer (vocab.json + merges.txt, as in Hugging Face CLIPTokenizer): the text is
// lower-cased and split into words by the reference's own pattern (the special tokens, the 's 't
// 're 've 'm 'll 'd contractions, runs of letters, single digits, runs of other symbols), each
// word's UTF-8 bytes are mapped to printable characters, then byte-pair merges by rank with
// "</w>" marking the word end. Sequences are <|startoftext|> ids... <|endoftext|>, truncated and
// padded (with <|endoftext|>, or the tokenizer's own pad token) to 77.
//
// Unicode: letters, digits and spaces follow the Unicode tables (PCRE2's `\p{L}`, `\p{N}`, `\s`)
// and lower case is full Unicode (ICU), as Python's `regex` and str.lower() give the reference;
// its ftfy repair and HTML unescaping are not applied. Ill-formed UTF-8 becomes U+FFFD first
// (core/base/utf8.h). The byte-level map, the pattern engine and the merge loop are shared with
// the LLM tokenizers (core/data/text). No LibTorch here.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/data/text/bpe.h"

namespace crucible::data::text {
class Regex;
}

namespace crucible::sd {

class ClipTokenizer {
  public:
    // Reads a tokenizer folder's vocab.json and merges.txt. InputError names the file (and
    // line) for anything malformed.
    static ClipTokenizer load(const std::filesystem::path& vocab_json,
                              const std::filesystem::path& merges_txt);
    // From contents (vocab.json text, merges.txt text); `where` names them in messages.
    static ClipTokenizer parse(std::string_view vocab_json, std::string_view merges_txt,
                               const std::string& where = "tokenizer");

    // Word pieces of a text (no special tokens).
    std::vector<std::string> tokenize(std::string_view text) const;
    std::vector<std::int64_t> encode_ids(std::string_view text) const;
    // bos + ids (truncated) + eos, padded with pad_id() to `length`.
    std::vector<std::int64_t> encode(std::string_view text, std::size_t length = 77) const;

    std::int64_t bos_id() const { return bos_; }
    std::int64_t eos_id() const { return eos_; }
    std::int64_t pad_id() const { return pad_ >= 0 ? pad_ : eos_; }
    // Pads with `token` instead of <|endoftext|> (SDXL's second tokenizer pads with "!").
    // InputError (naming `where`) when the vocabulary has no such token.
    void set_pad_token(const std::string& token, const std::string& where);
    std::size_t vocab_size() const { return vocab_.size(); }

  private:
    ClipTokenizer();
    void parse_vocab(std::string_view vocab_json, const std::string& where);
    void parse_merges(std::string_view merges_txt, const std::string& where);
    std::int64_t symbol_id(const std::string& symbol);
    void bpe(std::string_view word, std::vector<std::string>& out) const;

    std::unordered_map<std::string, std::int64_t> vocab_;
    // Every symbol a merge names or yields, numbered; merges keyed by the pair of numbers.
    std::unordered_map<std::string, std::int64_t> symbol_ids_;
    std::vector<std::string> symbols_;
    std::unordered_map<std::uint64_t, data::text::BpeMerge> merges_;
    std::shared_ptr<const data::text::Regex> pattern_;
    std::int64_t bos_ = 0, eos_ = 0, pad_ = -1;
};

}  // namespace crucible::sd
