// tokenizer.json (Hugging Face tokenizers format), own implementation: added tokens are split
// out first (leftmost, longest), every other segment is normalized, pre-tokenized into words
// and each word goes through the BPE model.
#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>

#include "core/base/error.h"
#include "core/base/json.h"
#include "core/base/utf8.h"
#include "core/data/text/bpe.h"
#include "core/data/text/byte_level.h"
#include "core/data/text/unicode.h"
#include "plugins/llm_lora/tokenizer.h"

namespace crucible::llm {
namespace {

using data::text::Regex;

constexpr std::size_t kMaxVocab = 4'000'000;
const char* kGpt2Pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

struct Piece {
    std::string text;
    bool first = false;  // begins the whole input (Metaspace prepend_scheme "first")
};

using Normalizer = std::function<std::string(const std::string&)>;
using PreTokenizer = std::function<std::vector<Piece>(const std::vector<Piece>&)>;

void replace_all(std::string& s, const std::string& from, const std::string& to) {
    if (from.empty()) return;
    std::string out;
    std::size_t pos = 0;
    for (std::size_t hit; (hit = s.find(from, pos)) != std::string::npos; pos = hit + from.size())
        out.append(s, pos, hit - pos).append(to);
    out.append(s, pos, std::string::npos);
    s.swap(out);
}

// A Replace/Split `pattern`: {"String": s} or {"Regex": r}.
std::shared_ptr<Regex> pattern_of(const Json& j, const std::string& where) {
    if (!j.is_object()) throw InputError(where, "pattern: expected {\"String\"|\"Regex\": ...}");
    if (j.contains("Regex") && j["Regex"].is_string())
        return std::make_shared<Regex>(j["Regex"].get<std::string>(), where);
    if (j.contains("String") && j["String"].is_string())
        return std::make_shared<Regex>(j["String"].get<std::string>(), where,
                                       Regex::Options{.literal = true});
    throw InputError(where, "pattern: expected {\"String\"|\"Regex\": ...}");
}

Normalizer make_normalizer(const Json& j, const std::string& where) {
    if (j.is_null()) return nullptr;
    const std::string type = get_string(j, "type", where);
    const std::string at = where + ": normalizer " + type;
    if (type == "Sequence") {
        std::vector<Normalizer> list;
        if (!j.contains("normalizers") || !j["normalizers"].is_array())
            throw InputError(at, "field 'normalizers': expected a list");
        for (const auto& n : j["normalizers"])
            if (auto f = make_normalizer(n, where)) list.push_back(f);
        return [list](const std::string& s) {
            std::string r = s;
            for (const auto& f : list)
                r = f(r);
            return r;
        };
    }
    if (type == "Prepend") {
        const std::string p = get_string(j, "prepend", at);
        return [p](const std::string& s) { return s.empty() ? s : p + s; };
    }
    if (type == "Replace") {
        const auto re = pattern_of(j.value("pattern", Json()), at);
        const std::string content = get_string(j, "content", at);
        return [re, content](const std::string& s) {
            std::string out;
            std::size_t pos = 0;
            for (const auto& [b, e] : re->find_all(s)) {
                out.append(s, pos, b - pos).append(content);
                pos = e;
            }
            return out.append(s, pos, std::string::npos);
        };
    }
    if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD")
        return [type](const std::string& s) { return data::text::unicode_normalize(s, type); };
    if (type == "Lowercase")
        return [](const std::string& s) { return data::text::unicode_lowercase(s); };
    if (type == "Strip") {
        const bool left = j.value("left", true), right = j.value("right", true);
        return [left, right](const std::string& s) {
            const char* ws = " \t\n\r\f\v";
            std::size_t b = left ? s.find_first_not_of(ws) : 0;
            if (b == std::string::npos) return std::string();
            std::size_t e = right ? s.find_last_not_of(ws) + 1 : s.size();
            return s.substr(b, e - b);
        };
    }
    throw InputError(where, "normalizer type '" + type + "' is not supported");
}

enum class SplitBehavior { Isolated, Removed, MergedWithPrevious, MergedWithNext, Contiguous };

// Splits one piece at the regex matches the way tokenizers' Split does.
std::vector<Piece> split_piece(const Piece& p, const Regex& re, SplitBehavior behavior,
                               bool invert) {
    struct Span {
        std::size_t b, e;
        bool match;
    };
    std::vector<Span> spans;
    std::size_t pos = 0;
    for (const auto& [b, e] : re.find_all(p.text)) {
        if (b > pos) spans.push_back({pos, b, false});
        spans.push_back({b, e, true});
        pos = e;
    }
    if (pos < p.text.size()) spans.push_back({pos, p.text.size(), false});
    if (invert)
        for (auto& s : spans)
            s.match = !s.match;
    std::vector<Span> out;
    for (std::size_t i = 0; i < spans.size(); ++i) {
        const Span& s = spans[i];
        switch (behavior) {
            case SplitBehavior::Isolated:
                out.push_back(s);
                break;
            case SplitBehavior::Removed:
                if (!s.match) out.push_back(s);
                break;
            case SplitBehavior::MergedWithPrevious:
                if (s.match && !out.empty() && !out.back().match)
                    out.back().e = s.e, out.back().match = true;
                else
                    out.push_back(s);
                break;
            case SplitBehavior::MergedWithNext:
                if (s.match && i + 1 < spans.size() && !spans[i + 1].match) {
                    out.push_back({s.b, spans[i + 1].e, false});
                    ++i;
                } else {
                    out.push_back(s);
                }
                break;
            case SplitBehavior::Contiguous:
                if (!out.empty() && out.back().match == s.match)
                    out.back().e = s.e;
                else
                    out.push_back(s);
                break;
        }
    }
    std::vector<Piece> pieces;
    for (const auto& s : out)
        if (s.e > s.b) pieces.push_back({p.text.substr(s.b, s.e - s.b), p.first && s.b == 0});
    return pieces;
}

SplitBehavior behavior_of(const std::string& name, const std::string& where) {
    if (name == "Isolated") return SplitBehavior::Isolated;
    if (name == "Removed") return SplitBehavior::Removed;
    if (name == "MergedWithPrevious") return SplitBehavior::MergedWithPrevious;
    if (name == "MergedWithNext") return SplitBehavior::MergedWithNext;
    if (name == "Contiguous") return SplitBehavior::Contiguous;
    throw InputError(where, "unknown split behavior '" + name + "'");
}

PreTokenizer make_pre_tokenizer(const Json& j, const std::string& where) {
    if (j.is_null()) return nullptr;
    const std::string type = get_string(j, "type", where);
    const std::string at = where + ": pre_tokenizer " + type;
    if (type == "Sequence") {
        std::vector<PreTokenizer> list;
        if (!j.contains("pretokenizers") || !j["pretokenizers"].is_array())
            throw InputError(at, "field 'pretokenizers': expected a list");
        for (const auto& n : j["pretokenizers"])
            if (auto f = make_pre_tokenizer(n, where)) list.push_back(f);
        return [list](const std::vector<Piece>& in) {
            std::vector<Piece> r = in;
            for (const auto& f : list)
                r = f(r);
            return r;
        };
    }
    if (type == "Split") {
        const auto re = pattern_of(j.value("pattern", Json()), at);
        const auto behavior = behavior_of(get_string(j, "behavior", at), at);
        const bool invert = j.value("invert", false);
        return [re, behavior, invert](const std::vector<Piece>& in) {
            std::vector<Piece> out;
            for (const auto& p : in)
                for (auto& q : split_piece(p, *re, behavior, invert))
                    out.push_back(std::move(q));
            return out;
        };
    }
    if (type == "ByteLevel") {
        const bool prefix = j.value("add_prefix_space", false);
        const bool use_regex = j.value("use_regex", true);
        const auto re = std::make_shared<Regex>(kGpt2Pattern, at);
        return [prefix, use_regex, re](const std::vector<Piece>& in) {
            std::vector<Piece> split;
            for (auto p : in) {
                if (prefix && !p.text.starts_with(' ')) p.text.insert(p.text.begin(), ' ');
                if (use_regex)
                    for (auto& q : split_piece(p, *re, SplitBehavior::Isolated, false))
                        split.push_back(std::move(q));
                else
                    split.push_back(std::move(p));
            }
            for (auto& p : split)
                p.text = data::text::bytes_to_symbols(p.text);
            return split;
        };
    }
    if (type == "Metaspace") {
        const std::string repl =
            j.contains("replacement") ? get_string(j, "replacement", at) : "\xE2\x96\x81";
        std::string scheme = j.value("prepend_scheme", std::string());
        if (scheme.empty()) scheme = j.value("add_prefix_space", true) ? "always" : "never";
        if (scheme != "always" && scheme != "first" && scheme != "never")
            throw InputError(at, "unknown prepend_scheme '" + scheme + "'");
        const bool do_split = j.value("split", true);
        const auto re = std::make_shared<Regex>(repl, at, Regex::Options{.literal = true});
        return [repl, scheme, do_split, re](const std::vector<Piece>& in) {
            std::vector<Piece> out;
            for (auto p : in) {
                replace_all(p.text, " ", repl);
                const bool prepend = scheme == "always" || (scheme == "first" && p.first);
                if (prepend && !p.text.starts_with(repl)) p.text.insert(0, repl);
                if (!do_split) {
                    out.push_back(std::move(p));
                    continue;
                }
                for (auto& q : split_piece(p, *re, SplitBehavior::MergedWithNext, false))
                    out.push_back(std::move(q));
            }
            return out;
        };
    }
    if (type == "Digits") {
        const bool single = j.value("individual_digits", false);
        const auto re = std::make_shared<Regex>(single ? "\\p{N}" : "\\p{N}+", at);
        return [re](const std::vector<Piece>& in) {
            std::vector<Piece> out;
            for (const auto& p : in)
                for (auto& q : split_piece(p, *re, SplitBehavior::Isolated, false))
                    out.push_back(std::move(q));
            return out;
        };
    }
    if (type == "Whitespace" || type == "WhitespaceSplit") {
        const bool ws = type == "WhitespaceSplit";
        const auto re = std::make_shared<Regex>(ws ? "\\s+" : "\\w+|[^\\w\\s]+", at);
        return [re, ws](const std::vector<Piece>& in) {
            std::vector<Piece> out;
            for (const auto& p : in)
                for (auto& q : split_piece(p, *re, SplitBehavior::Removed, !ws))
                    out.push_back(std::move(q));
            return out;
        };
    }
    throw InputError(where, "pre_tokenizer type '" + type + "' is not supported");
}

struct AddedToken {
    std::int64_t id;
    std::string content;
    bool special, lstrip, rstrip, single_word;
};

bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool is_word_byte(unsigned char c) {
    return std::isalnum(c) || c == '_' || c >= 0x80;
}

class HfTokenizer : public Tokenizer {
  public:
    HfTokenizer(std::string_view text, const std::string& where, std::string_view config_text)
        : where_(where) {
        const Json j = parse_json(text, where);
        if (!j.is_object()) throw InputError(where, "expected a JSON object");
        const Json& model = require_field(j, "model", where);
        if (!model.is_object()) throw InputError(where, "field 'model': expected an object");
        const std::string type = model.value("type", std::string("BPE"));
        if (type != "BPE")
            throw InputError(where, "model type '" + type + "' is not supported (only BPE)");
        load_bpe(model);
        normalizer_ = make_normalizer(j.value("normalizer", Json()), where);
        pre_tokenizer_ = make_pre_tokenizer(j.value("pre_tokenizer", Json()), where);
        load_added(j.value("added_tokens", Json::array()));
        load_post_processor(j.value("post_processor", Json()));
        load_decoder(j.value("decoder", Json()));
        if (!config_text.empty())
            load_config(parse_json(config_text, where + " (tokenizer_config.json)"));
    }

    std::string kind() const override { return "tokenizer.json"; }
    std::int64_t vocab_size() const override {
        return static_cast<std::int64_t>(id_to_token_.size());
    }

    std::optional<std::int64_t> token_id(std::string_view token) const override {
        const auto it = vocab_.find(std::string(token));
        if (it != vocab_.end()) return it->second;
        return std::nullopt;
    }
    std::string token_text(std::int64_t id) const override {
        if (id < 0 || id >= vocab_size()) return {};
        return id_to_token_[static_cast<std::size_t>(id)];
    }

    std::vector<std::int64_t> encode(std::string_view text, bool add_special,
                                     bool parse_special) const override {
        if (!is_valid_utf8(text)) throw InputError("text", "is not valid UTF-8");
        std::vector<std::int64_t> ids;
        bool first = true;
        auto plain = [&](std::string_view segment) {
            if (segment.empty()) return;
            std::string s(segment);
            if (normalizer_) s = normalizer_(s);
            std::vector<Piece> pieces{{s, first}};
            if (pre_tokenizer_) pieces = pre_tokenizer_(pieces);
            for (const auto& p : pieces)
                bpe(p.text, ids);
        };
        if (!parse_special || added_.empty()) {
            plain(text);
        } else {
            std::size_t pos = 0, seg = 0;
            while (pos < text.size()) {
                const AddedToken* hit = match_added(text, pos);
                if (hit == nullptr) {
                    pos += decode_utf8_char(text, pos).length;
                    continue;
                }
                std::size_t b = pos, e = pos + hit->content.size();
                if (hit->lstrip)
                    while (b > seg && is_space(text[b - 1]))
                        --b;
                if (hit->rstrip)
                    while (e < text.size() && is_space(text[e]))
                        ++e;
                plain(text.substr(seg, b - seg));
                first = false;
                ids.push_back(hit->id);
                pos = seg = e;
            }
            plain(text.substr(seg));
        }
        if (add_special) {
            std::vector<std::int64_t> out;
            for (const auto& item : template_single_) {
                if (item.sequence)
                    out.insert(out.end(), ids.begin(), ids.end());
                else
                    out.insert(out.end(), item.ids.begin(), item.ids.end());
            }
            if (!template_single_.empty()) return out;
        }
        return ids;
    }

    std::string decode(const std::vector<std::int64_t>& ids, bool skip_special) const override {
        std::vector<std::string> tokens;
        for (auto id : ids) {
            if (id < 0 || id >= vocab_size())
                throw InputError("ids", "token id " + std::to_string(id) +
                                            " is outside the vocabulary (0.." +
                                            std::to_string(vocab_size() - 1) + ")");
            if (skip_special && special_ids_.count(id)) continue;
            tokens.push_back(id_to_token_[static_cast<std::size_t>(id)]);
        }
        for (const auto& d : decoders_)
            tokens = d(tokens);
        std::string out;
        for (const auto& t : tokens)
            out += t;
        return utf8_lossy(out);
    }

  private:
    struct TemplateItem {
        bool sequence = false;
        std::vector<std::int64_t> ids;
    };

    void load_bpe(const Json& model) {
        const Json& vocab = require_field(model, "vocab", where_);
        if (!vocab.is_object()) throw InputError(where_, "field 'model.vocab': expected an object");
        if (vocab.size() > kMaxVocab) throw InputError(where_, "vocabulary is implausibly large");
        id_to_token_.resize(vocab.size());
        vocab_.reserve(vocab.size() + 1024);
        std::vector<bool> seen(vocab.size(), false);
        for (const auto& [token, id] : vocab.items()) {
            if (!id.is_number_integer() || id.get<std::int64_t>() < 0 ||
                id.get<std::int64_t>() >= static_cast<std::int64_t>(kMaxVocab))
                throw InputError(where_, "model.vocab['" + token + "']: expected a token id");
            const auto i = static_cast<std::size_t>(id.get<std::int64_t>());
            if (i >= id_to_token_.size()) {
                id_to_token_.resize(i + 1);
                seen.resize(i + 1, false);
            }
            if (seen[i])
                throw InputError(where_, "model.vocab: id " + std::to_string(i) + " is used twice");
            seen[i] = true;
            id_to_token_[i] = token;
            vocab_[token] = static_cast<std::int64_t>(i);
        }
        static const Json no_merges = Json::array();
        const Json& merges = model.contains("merges") ? model["merges"] : no_merges;
        if (!merges.is_array()) throw InputError(where_, "field 'model.merges': expected a list");
        merges_.reserve(merges.size());
        std::int64_t rank = 0;
        for (const auto& m : merges) {
            std::string a, b;
            if (m.is_string()) {
                const std::string s = m.get<std::string>();
                const auto space = s.find(' ', 1);
                if (space == std::string::npos)
                    throw InputError(where_,
                                     "merge " + std::to_string(rank) + " '" + s + "' is not 'a b'");
                a = s.substr(0, space);
                b = s.substr(space + 1);
            } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
                a = m[0].get<std::string>();
                b = m[1].get<std::string>();
            } else {
                throw InputError(where_,
                                 "merge " + std::to_string(rank) + ": expected \"a b\" or [a, b]");
            }
            const auto ia = vocab_.find(a), ib = vocab_.find(b), im = vocab_.find(a + b);
            if (ia == vocab_.end() || ib == vocab_.end() || im == vocab_.end())
                throw InputError(where_, "merge " + std::to_string(rank) + " '" + a + " " + b +
                                             "' uses a token that is not in the vocabulary");
            merges_.emplace(pair_key(ia->second, ib->second), std::make_pair(rank, im->second));
            ++rank;
        }
        ignore_merges_ = model.value("ignore_merges", false);
        byte_fallback_ = model.value("byte_fallback", false);
        fuse_unk_ = model.value("fuse_unk", false);
        if (model.contains("unk_token") && model["unk_token"].is_string()) {
            const auto it = vocab_.find(model["unk_token"].get<std::string>());
            if (it != vocab_.end()) unk_id_ = it->second;
        }
        for (const char* f : {"continuing_subword_prefix", "end_of_word_suffix"})
            if (model.contains(f) && model[f].is_string() && !model[f].get<std::string>().empty())
                throw InputError(where_, std::string("model.") + f + " is not supported");
        if (byte_fallback_)
            for (int b = 0; b < 256; ++b) {
                const auto it =
                    vocab_.find(data::text::byte_piece_name(static_cast<unsigned char>(b)));
                byte_ids_[b] = it == vocab_.end() ? -1 : it->second;
            }
    }

    void load_added(const Json& list) {
        if (!list.is_array()) throw InputError(where_, "field 'added_tokens': expected a list");
        for (const auto& t : list) {
            if (!t.is_object() || !t.contains("id") || !t["id"].is_number_integer() ||
                !t.contains("content") || !t["content"].is_string() ||
                t["content"].get<std::string>().empty())
                throw InputError(
                    where_, "added_tokens: each entry needs an integer id and a non-empty content");
            AddedToken a{t["id"].get<std::int64_t>(), t["content"].get<std::string>(),
                         t.value("special", false),   t.value("lstrip", false),
                         t.value("rstrip", false),    t.value("single_word", false)};
            if (a.id < 0 || a.id >= static_cast<std::int64_t>(kMaxVocab))
                throw InputError(where_, "added token '" + a.content + "': bad id");
            if (static_cast<std::size_t>(a.id) >= id_to_token_.size())
                id_to_token_.resize(static_cast<std::size_t>(a.id) + 1);
            id_to_token_[static_cast<std::size_t>(a.id)] = a.content;
            vocab_[a.content] = a.id;
            if (a.special) special_ids_.insert(a.id);
            added_.push_back(a);
        }
        // Longest first within each first byte: leftmost-longest matching.
        for (std::size_t i = 0; i < added_.size(); ++i)
            by_first_byte_[static_cast<unsigned char>(added_[i].content[0])].push_back(i);
        for (auto& v : by_first_byte_)
            std::sort(v.begin(), v.end(), [&](std::size_t a, std::size_t b) {
                return added_[a].content.size() > added_[b].content.size();
            });
    }

    const AddedToken* match_added(std::string_view text, std::size_t pos) const {
        for (std::size_t i : by_first_byte_[static_cast<unsigned char>(text[pos])]) {
            const AddedToken& a = added_[i];
            if (text.compare(pos, a.content.size(), a.content) != 0) continue;
            if (a.single_word) {
                const std::size_t e = pos + a.content.size();
                if ((pos > 0 && is_word_byte(static_cast<unsigned char>(text[pos - 1]))) ||
                    (e < text.size() && is_word_byte(static_cast<unsigned char>(text[e]))))
                    continue;
            }
            return &a;
        }
        return nullptr;
    }

    void load_post_processor(const Json& j) {
        if (j.is_null()) return;
        const std::string type = get_string(j, "type", where_);
        if (type == "Sequence") {
            for (const auto& p : j.value("processors", Json::array()))
                load_post_processor(p);
            return;
        }
        if (type == "ByteLevel") return;  // offsets only
        if (type != "TemplateProcessing")
            throw InputError(where_, "post_processor type '" + type + "' is not supported");
        const Json& special = j.value("special_tokens", Json::object());
        for (const auto& item : j.value("single", Json::array())) {
            TemplateItem t;
            if (item.contains("Sequence")) {
                t.sequence = true;
            } else if (item.contains("SpecialToken")) {
                const std::string name = get_string(item["SpecialToken"], "id", where_);
                if (special.contains(name) && special[name].contains("ids")) {
                    for (const auto& id : special[name]["ids"])
                        t.ids.push_back(id.get<std::int64_t>());
                } else if (auto id = token_id(name)) {
                    t.ids.push_back(*id);
                } else {
                    throw InputError(where_,
                                     "post_processor: unknown special token '" + name + "'");
                }
            }
            template_single_.push_back(t);
        }
    }

    void load_decoder(const Json& j) {
        if (j.is_null()) return;
        const std::string type = get_string(j, "type", where_);
        if (type == "Sequence") {
            for (const auto& d : j.value("decoders", Json::array()))
                load_decoder(d);
            return;
        }
        if (type == "ByteLevel") {
            decoders_.push_back([](const std::vector<std::string>& tokens) {
                std::string bytes;
                for (const auto& t : tokens)
                    bytes += data::text::symbols_to_bytes(t);
                return std::vector<std::string>{bytes};
            });
        } else if (type == "Replace") {
            const Json& p = j.value("pattern", Json());
            if (!p.is_object() || !p.contains("String"))
                throw InputError(where_, "decoder Replace: only String patterns");
            const std::string from = p["String"].get<std::string>(),
                              to = get_string(j, "content", where_);
            decoders_.push_back([from, to](std::vector<std::string> tokens) {
                for (auto& t : tokens)
                    replace_all(t, from, to);
                return tokens;
            });
        } else if (type == "ByteFallback") {
            decoders_.push_back([](const std::vector<std::string>& tokens) {
                std::vector<std::string> out;
                std::string bytes;
                auto flush = [&] {
                    if (!bytes.empty()) out.push_back(utf8_lossy(bytes));
                    bytes.clear();
                };
                for (const auto& t : tokens) {
                    if (const int byte = data::text::parse_byte_piece(t); byte >= 0) {
                        bytes += static_cast<char>(byte);
                        continue;
                    }
                    flush();
                    out.push_back(t);
                }
                flush();
                return out;
            });
        } else if (type == "Fuse") {
            decoders_.push_back([](const std::vector<std::string>& tokens) {
                std::string s;
                for (const auto& t : tokens)
                    s += t;
                return std::vector<std::string>{s};
            });
        } else if (type == "Strip") {
            const std::string content = get_string(j, "content", where_);
            const int start = j.value("start", 0), stop = j.value("stop", 0);
            decoders_.push_back([content, start, stop](std::vector<std::string> tokens) {
                for (auto& t : tokens) {
                    for (int i = 0; i < start && t.starts_with(content); ++i)
                        t.erase(0, content.size());
                    for (int i = 0; i < stop && t.ends_with(content); ++i)
                        t.erase(t.size() - content.size());
                }
                return tokens;
            });
        } else if (type == "Metaspace") {
            const std::string repl =
                j.contains("replacement") ? get_string(j, "replacement", where_) : "\xE2\x96\x81";
            std::string scheme = j.value("prepend_scheme", std::string("always"));
            decoders_.push_back([repl, scheme](std::vector<std::string> tokens) {
                for (std::size_t i = 0; i < tokens.size(); ++i) {
                    replace_all(tokens[i], repl, " ");
                    if (i == 0 && scheme != "never" && tokens[i].starts_with(' '))
                        tokens[i].erase(0, 1);
                }
                return tokens;
            });
        } else {
            throw InputError(where_, "decoder type '" + type + "' is not supported");
        }
    }

    void load_config(const Json& c) {
        auto token_of = [](const Json& v) -> std::string {
            if (v.is_string()) return v.get<std::string>();
            if (v.is_object() && v.contains("content") && v["content"].is_string())
                return v["content"].get<std::string>();
            return {};
        };
        if (!c.is_object()) return;
        eos_token = token_of(c.value("eos_token", Json()));
        if (!eos_token.empty()) eos_id = token_id(eos_token);
        // A string, or a list of {"name", "template"} of which "default" is the chat one.
        const Json t = c.value("chat_template", Json());
        if (t.is_string()) chat_template = t.get<std::string>();
        if (t.is_array())
            for (const auto& item : t)
                if (item.is_object() && item.value("name", Json()) == "default" &&
                    item.value("template", Json()).is_string())
                    chat_template = item["template"].get<std::string>();
    }

    static std::uint64_t pair_key(std::int64_t a, std::int64_t b) {
        return (static_cast<std::uint64_t>(a) << 32) | static_cast<std::uint64_t>(b);
    }

    // BPE of one pre-tokenized word.
    void bpe(const std::string& word, std::vector<std::int64_t>& out) const {
        if (word.empty()) return;
        if (ignore_merges_) {
            const auto it = vocab_.find(word);
            if (it != vocab_.end()) {
                out.push_back(it->second);
                return;
            }
        }
        // Initial symbols: one per character (bytes or unk when not in the vocabulary).
        std::vector<std::int64_t> sym;
        bool last_unk = false;
        for (auto c : utf8_chars(word)) {
            const auto it = vocab_.find(std::string(c));
            if (it != vocab_.end()) {
                sym.push_back(it->second);
                last_unk = false;
                continue;
            }
            bool done = false;
            if (byte_fallback_) {
                done = true;
                for (unsigned char b : c)
                    done = done && byte_ids_[b] >= 0;
                if (done)
                    for (unsigned char b : c)
                        sym.push_back(byte_ids_[b]);
            }
            if (done) {
                last_unk = false;
                continue;
            }
            if (!unk_id_)
                throw InputError("text", "character '" + std::string(c) +
                                             "' has no token and the tokenizer has no unk token");
            if (!(fuse_unk_ && last_unk)) sym.push_back(*unk_id_);
            last_unk = true;
        }
        data::text::bpe_merge(sym, [this](std::int64_t left, std::int64_t right) {
            std::optional<data::text::BpeMerge> merge;
            const auto it = merges_.find(pair_key(left, right));
            if (it != merges_.end())
                merge =
                    data::text::BpeMerge{static_cast<double>(it->second.first), it->second.second};
            return merge;
        });
        out.insert(out.end(), sym.begin(), sym.end());
    }

    std::string where_;
    std::unordered_map<std::string, std::int64_t> vocab_;
    std::vector<std::string> id_to_token_;
    std::unordered_map<std::uint64_t, std::pair<std::int64_t, std::int64_t>> merges_;
    bool ignore_merges_ = false, byte_fallback_ = false, fuse_unk_ = false;
    std::optional<std::int64_t> unk_id_;
    std::int64_t byte_ids_[256] = {};
    Normalizer normalizer_;
    PreTokenizer pre_tokenizer_;
    std::vector<AddedToken> added_;
    std::vector<std::size_t> by_first_byte_[256];
    std::set<std::int64_t> special_ids_;
    std::vector<TemplateItem> template_single_;
    std::vector<std::function<std::vector<std::string>(std::vector<std::string>)>> decoders_;
};

}  // namespace

std::unique_ptr<Tokenizer> make_hf_tokenizer(std::string_view json_text, const std::string& where,
                                             std::string_view config_json) {
    return std::make_unique<HfTokenizer>(json_text, where, config_json);
}

}  // namespace crucible::llm
