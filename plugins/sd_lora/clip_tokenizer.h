#pragma once
// The CLIP BPE tokenizer (vocab.json + merges.txt, as in Hugging Face CLIPTokenizer): lower-cased,
// whitespace-collapsed text split into words (letters, single digits, other symbols, the 's 't
// 're 've 'm 'll 'd contractions), each word's UTF-8 bytes mapped to printable characters, then
// byte-pair merges by rank with "</w>" marking the word end. Sequences are
// <|startoftext|> ids... <|endoftext|>, truncated and padded (with <|endoftext|>) to 77.
//
// Character classes: ASCII is exact; other code points count as letters except the common
// punctuation / symbol blocks (General Punctuation, CJK Symbols, fullwidth ASCII punctuation);
// letters outside ASCII are not lower-cased. (The reference uses full Unicode tables and ftfy.)
// No LibTorch here.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

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
    std::int64_t pad_id() const { return eos_; }
    std::size_t vocab_size() const { return vocab_.size(); }

    // The 256 printable stand-ins for bytes (GPT-2 / CLIP byte-level BPE), as UTF-8.
    static const std::vector<std::string>& byte_symbols();

  private:
    void parse_vocab(std::string_view vocab_json, const std::string& where);
    void parse_merges(std::string_view merges_txt, const std::string& where);
    std::vector<std::string> bpe(const std::string& word) const;
    std::unordered_map<std::string, std::int64_t> vocab_;
    std::unordered_map<std::string, std::size_t> ranks_;  // "a b" -> rank
    std::int64_t bos_ = 0, eos_ = 0;
};

}  // namespace crucible::sd
