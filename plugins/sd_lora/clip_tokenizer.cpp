#include "plugins/sd_lora/clip_tokenizer.h"

#include <algorithm>
#include <limits>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/json.h"

namespace crucible::sd {
namespace {

// The reference keeps merges [1, 49152 - 256 - 2] of the file.
constexpr std::size_t kMaxMerges = 49152 - 256 - 2;
constexpr std::uint64_t kMaxFileBytes = 64ull << 20;

std::string utf8_of(char32_t cp) {
    std::string s;
    if (cp < 0x80) {
        s += static_cast<char>(cp);
    } else if (cp < 0x800) {
        s += static_cast<char>(0xC0 | (cp >> 6));
        s += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        s += static_cast<char>(0xE0 | (cp >> 12));
        s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        s += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        s += static_cast<char>(0xF0 | (cp >> 18));
        s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        s += static_cast<char>(0x80 | (cp & 0x3F));
    }
    return s;
}

// Decodes UTF-8 leniently: an invalid byte becomes U+FFFD.
std::vector<char32_t> decode_utf8(std::string_view s) {
    std::vector<char32_t> out;
    std::size_t i = 0;
    while (i < s.size()) {
        const auto c = static_cast<unsigned char>(s[i]);
        int len = 0;
        char32_t cp = 0;
        if (c < 0x80) {
            len = 1;
            cp = c;
        } else if ((c & 0xE0) == 0xC0) {
            len = 2;
            cp = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            len = 3;
            cp = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            len = 4;
            cp = c & 0x07;
        }
        bool ok = len > 0 && i + static_cast<std::size_t>(len) <= s.size();
        for (int k = 1; ok && k < len; ++k) {
            const auto cc = static_cast<unsigned char>(s[i + static_cast<std::size_t>(k)]);
            if ((cc & 0xC0) != 0x80) ok = false;
            cp = (cp << 6) | (cc & 0x3F);
        }
        if (!ok || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
            out.push_back(0xFFFD);
            ++i;
            continue;
        }
        out.push_back(cp);
        i += static_cast<std::size_t>(len);
    }
    return out;
}

bool is_space(char32_t c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' || c == 0x85 ||
           c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
           c == 0x202F || c == 0x205F || c == 0x3000;
}

bool is_digit(char32_t c) {
    return (c >= '0' && c <= '9') || (c >= 0xFF10 && c <= 0xFF19);
}

bool is_letter(char32_t c) {
    if (c < 0x80) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (c < 0xC0) return c == 0xAA || c == 0xB5 || c == 0xBA;
    if (c == 0xD7 || c == 0xF7) return false;
    if (c >= 0x2000 && c <= 0x2BFF) return false;  // punctuation, symbols, arrows, shapes
    if (c >= 0x3000 && c <= 0x303F) return false;  // CJK symbols and punctuation
    if (c >= 0xFE30 && c <= 0xFE4F) return false;
    if (c >= 0xFF00 && c <= 0xFF20) return false;  // fullwidth punctuation and digits
    if (c >= 0xFF3B && c <= 0xFF40) return false;
    if (c >= 0xFF5B && c <= 0xFF65) return false;
    if (c >= 0x1F000 && c <= 0x1FAFF) return false;  // emoji and pictographs
    if (c == 0xFFFD || (c >= 0xE000 && c <= 0xF8FF)) return false;
    return true;
}

}  // namespace

const std::vector<std::string>& ClipTokenizer::byte_symbols() {
    static const std::vector<std::string> table = [] {
        std::vector<std::string> t(256);
        int extra = 0;
        for (int b = 0; b < 256; ++b) {
            const bool printable =
                (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            t[static_cast<std::size_t>(b)] = utf8_of(
                printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + extra++));
        }
        return t;
    }();
    return table;
}

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
    ClipTokenizer& t = *this;
    const Json vocab = parse_json(vocab_json, where);
    if (!vocab.is_object() || vocab.empty())
        throw InputError(where, "must be a non-empty JSON object of token -> id");
    for (const auto& [token, id] : vocab.items()) {
        if (!id.is_number_integer() || id.get<std::int64_t>() < 0 ||
            id.get<std::int64_t>() >= std::numeric_limits<std::int32_t>::max())
            throw InputError(where, "id of '" + token + "' is not a non-negative integer");
        t.vocab_[token] = id.get<std::int64_t>();
    }
    for (const char* special : {"<|startoftext|>", "<|endoftext|>"})
        if (!t.vocab_.count(special))
            throw InputError(where, std::string("no '") + special + "' token");
    t.bos_ = t.vocab_.at("<|startoftext|>");
    t.eos_ = t.vocab_.at("<|endoftext|>");
}

void ClipTokenizer::parse_merges(std::string_view merges_txt, const std::string& where) {
    ClipTokenizer& t = *this;
    std::size_t line_no = 0, pos = 0;
    while (pos < merges_txt.size() && t.ranks_.size() < kMaxMerges) {
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
        t.ranks_.emplace(std::string(line), t.ranks_.size());
    }
}

std::vector<std::string> ClipTokenizer::bpe(const std::string& word) const {
    // word: byte symbols (UTF-8 strings), the last one gets "</w>".
    std::vector<std::string> parts;
    for (char32_t cp : decode_utf8(word))
        parts.push_back(utf8_of(cp));
    if (parts.empty()) return parts;
    parts.back() += "</w>";
    while (parts.size() > 1) {
        std::size_t best = std::numeric_limits<std::size_t>::max(), at = 0;
        for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
            const auto it = ranks_.find(parts[i] + " " + parts[i + 1]);
            if (it != ranks_.end() && it->second < best) {
                best = it->second;
                at = i;
            }
        }
        if (best == std::numeric_limits<std::size_t>::max()) break;
        // Merge every occurrence of the best pair, left to right.
        const std::string a = parts[at], b = parts[at + 1];
        std::vector<std::string> merged;
        for (std::size_t i = 0; i < parts.size();) {
            if (i + 1 < parts.size() && parts[i] == a && parts[i + 1] == b) {
                merged.push_back(a + b);
                i += 2;
            } else {
                merged.push_back(parts[i++]);
            }
        }
        parts = std::move(merged);
    }
    return parts;
}

std::vector<std::string> ClipTokenizer::tokenize(std::string_view text) const {
    // Lower-case ASCII, collapse whitespace.
    std::vector<char32_t> cps = decode_utf8(text);
    for (auto& c : cps)
        if (c >= 'A' && c <= 'Z') c = c - 'A' + 'a';
    std::vector<std::string> words;
    const auto& bytes = byte_symbols();
    auto emit = [&](std::size_t from, std::size_t to) {
        std::string raw;
        for (std::size_t i = from; i < to; ++i)
            raw += utf8_of(cps[i]);
        std::string mapped;
        for (unsigned char ch : raw)
            mapped += bytes[ch];
        for (auto& piece : bpe(mapped))
            words.push_back(std::move(piece));
    };
    auto starts_with = [&](std::size_t i, std::u32string_view s) {
        if (i + s.size() > cps.size()) return false;
        for (std::size_t k = 0; k < s.size(); ++k)
            if (cps[i + k] != s[k]) return false;
        return true;
    };
    std::size_t i = 0;
    while (i < cps.size()) {
        const char32_t c = cps[i];
        if (is_space(c)) {
            ++i;
            continue;
        }
        if (starts_with(i, U"<|startoftext|>") || starts_with(i, U"<|endoftext|>")) {
            const std::size_t len = cps[i + 2] == 's' ? 15 : 13;
            words.push_back(cps[i + 2] == 's' ? "<|startoftext|>" : "<|endoftext|>");
            i += len;
            continue;
        }
        if (c == '\'') {
            bool done = false;
            for (std::u32string_view suffix :
                 {U"'s", U"'t", U"'re", U"'ve", U"'m", U"'ll", U"'d"}) {
                if (starts_with(i, suffix)) {
                    emit(i, i + suffix.size());
                    i += suffix.size();
                    done = true;
                    break;
                }
            }
            if (done) continue;
        }
        std::size_t j = i + 1;
        if (is_letter(c)) {
            while (j < cps.size() && is_letter(cps[j]))
                ++j;
        } else if (!is_digit(c)) {
            while (j < cps.size() && !is_space(cps[j]) && !is_letter(cps[j]) && !is_digit(cps[j]))
                ++j;
        }
        emit(i, j);
        i = j;
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

}  // namespace crucible::sd
