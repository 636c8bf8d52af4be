#include "plugins/sd_lora/clip_tokenizer.h"

#include <limits>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/json.h"
#include "core/base/utf8.h"
#include "core/data/text/byte_level.h"
#include "core/data/text/unicode.h"

namespace crucible::sd {
namespace {

// The reference keeps merges [1, 49152 - 256 - 2] of the file.
constexpr std::size_t kMaxMerges = 49152 - 256 - 2;
constexpr std::uint64_t kMaxFileBytes = 64ull << 20;
constexpr std::string_view kStartOfText = "<|startoftext|>", kEndOfText = "<|endoftext|>";
constexpr std::string_view kWordEnd = "</w>";

// CLIPTokenizer's pattern (re.IGNORECASE), on lower-cased text.
const char* kClipPattern =
    "<\\|startoftext\\|>|<\\|endoftext\\|>|'s|'t|'re|'ve|'m|'ll|'d|[\\p{L}]+|[\\p{N}]|"
    "[^\\s\\p{L}\\p{N}]+";

std::uint64_t pair_key(std::int64_t a, std::int64_t b) {
    return (static_cast<std::uint64_t>(a) << 32) | static_cast<std::uint32_t>(b);
}

}  // namespace

ClipTokenizer::ClipTokenizer()
    : pattern_(std::make_shared<const data::text::Regex>(
          kClipPattern, "CLIP pattern", data::text::Regex::Options{.case_insensitive = true})) {}

ClipTokenizer ClipTokenizer::load(const std::filesystem::path& vocab_json,
                                  const std::filesystem::path& merges_txt) {
    const std::string v = read_file_bytes_limited(vocab_json, kMaxFileBytes);
    const std::string m = read_file_bytes_limited(merges_txt, kMaxFileBytes);
    ClipTokenizer t;
    t.parse_vocab(v, path_to_utf8(vocab_json));
    t.parse_merges(m, path_to_utf8(merges_txt));
    return t;
}

ClipTokenizer ClipTokenizer::parse(std::string_view vocab_json, std::string_view merges_txt,
                                   const std::string& where) {
    ClipTokenizer t;
    t.parse_vocab(vocab_json, where + " (vocab.json)");
    t.parse_merges(merges_txt, where + " (merges.txt)");
    return t;
}

void ClipTokenizer::parse_vocab(std::string_view vocab_json, const std::string& where) {
    const Json vocab = parse_json(vocab_json, where);
    if (!vocab.is_object() || vocab.empty())
        throw InputError(where, "must be a non-empty JSON object of token -> id");
    for (const auto& [token, id] : vocab.items()) {
        if (!id.is_number_integer() || id.get<std::int64_t>() < 0 ||
            id.get<std::int64_t>() >= std::numeric_limits<std::int32_t>::max())
            throw InputError(where, "id of '" + token + "' is not a non-negative integer");
        vocab_[token] = id.get<std::int64_t>();
    }
    for (std::string_view special : {kStartOfText, kEndOfText})
        if (!vocab_.count(std::string(special)))
            throw InputError(where, "no '" + std::string(special) + "' token");
    bos_ = vocab_.at(std::string(kStartOfText));
    eos_ = vocab_.at(std::string(kEndOfText));
}

std::int64_t ClipTokenizer::symbol_id(const std::string& symbol) {
    const auto [it, inserted] =
        symbol_ids_.emplace(symbol, static_cast<std::int64_t>(symbols_.size()));
    if (inserted) symbols_.push_back(symbol);
    return it->second;
}

void ClipTokenizer::parse_merges(std::string_view merges_txt, const std::string& where) {
    std::size_t line_no = 0, pos = 0;
    while (pos < merges_txt.size() && merges_.size() < kMaxMerges) {
        auto end = merges_txt.find('\n', pos);
        if (end == std::string_view::npos) end = merges_txt.size();
        std::string_view line = merges_txt.substr(pos, end - pos);
        pos = end + 1;
        ++line_no;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line_no == 1 && line.rfind("#version", 0) == 0) continue;
        if (line.empty()) continue;
        const auto space = line.find(' ');
        if (space == std::string_view::npos || space == 0 || space + 1 >= line.size() ||
            line.find(' ', space + 1) != std::string_view::npos)
            throw InputError(where + ":" + std::to_string(line_no),
                             "a merge line must be two symbols separated by one space");
        const std::string a(line.substr(0, space)), b(line.substr(space + 1));
        const std::int64_t left = symbol_id(a), right = symbol_id(b), merged = symbol_id(a + b);
        // A repeated line keeps its first rank; ranks count distinct merges.
        merges_.emplace(pair_key(left, right),
                        data::text::BpeMerge{static_cast<double>(merges_.size()), merged});
    }
}

void ClipTokenizer::bpe(std::string_view word, std::vector<std::string>& out) const {
    // word: byte symbols; the last one gets "</w>". A symbol that no merge names gets a number
    // past the table's, so it never merges.
    const std::vector<std::string_view> chars = utf8_chars(word);
    if (chars.empty()) return;
    std::vector<std::string> unnamed;
    std::vector<std::int64_t> symbols;
    symbols.reserve(chars.size());
    for (std::size_t i = 0; i < chars.size(); ++i) {
        std::string s(chars[i]);
        if (i + 1 == chars.size()) s += kWordEnd;
        const auto it = symbol_ids_.find(s);
        if (it != symbol_ids_.end()) {
            symbols.push_back(it->second);
        } else {
            symbols.push_back(static_cast<std::int64_t>(symbols_.size() + unnamed.size()));
            unnamed.push_back(std::move(s));
        }
    }
    data::text::bpe_merge(symbols, [this](std::int64_t left, std::int64_t right) {
        std::optional<data::text::BpeMerge> merge;
        const auto it = merges_.find(pair_key(left, right));
        if (it != merges_.end()) merge = it->second;
        return merge;
    });
    for (const std::int64_t s : symbols) {
        const auto i = static_cast<std::size_t>(s);
        out.push_back(i < symbols_.size() ? symbols_[i] : unnamed[i - symbols_.size()]);
    }
}

std::vector<std::string> ClipTokenizer::tokenize(std::string_view text) const {
    const std::string lower = data::text::unicode_lowercase(utf8_lossy(text));
    std::vector<std::string> words;
    for (const auto& [b, e] : pattern_->find_all(lower)) {
        const std::string_view word = std::string_view(lower).substr(b, e - b);
        if (word == kStartOfText || word == kEndOfText)
            words.emplace_back(word);
        else
            bpe(data::text::bytes_to_symbols(word), words);
    }
    return words;
}

std::vector<std::int64_t> ClipTokenizer::encode_ids(std::string_view text) const {
    std::vector<std::int64_t> ids;
    for (const auto& piece : tokenize(text)) {
        const auto it = vocab_.find(piece);
        ids.push_back(it == vocab_.end() ? eos_ : it->second);  // unknown -> <|endoftext|>
    }
    return ids;
}

std::vector<std::int64_t> ClipTokenizer::encode(std::string_view text, std::size_t length) const {
    if (length < 2) throw InputError("max_length", "must be at least 2");
    std::vector<std::int64_t> ids = encode_ids(text);
    if (ids.size() > length - 2) ids.resize(length - 2);
    std::vector<std::int64_t> out;
    out.reserve(length);
    out.push_back(bos_);
    out.insert(out.end(), ids.begin(), ids.end());
    out.push_back(eos_);
    out.resize(length, pad_id());
    return out;
}

void ClipTokenizer::set_pad_token(const std::string& token, const std::string& where) {
    const auto it = vocab_.find(token);
    if (it == vocab_.end())
        throw InputError(where, "pad token '" + token + "' is not in the vocabulary");
    pad_ = it->second;
}

}  // namespace crucible::sd
