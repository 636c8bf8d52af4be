// tokenizer.model (SentencePiece ModelProto; Llama 1/2, Mistral), own implementation written
// from the format description. Debian's libsentencepiece does share a process with the torch
// 2.11 wheel and gives the same ids (tests/llm_lora/sentencepiece_library_test.cpp; see the
// llm_lora README), so this reader may give way to it.
//
// Encoding: special pieces (CONTROL, UNKNOWN) written in the text are split out first when
// `parse_special` is set (leftmost, longest); every other segment is normalized on its own
// (optional NFKC, extra whitespace removed, dummy prefix "▁", spaces escaped to "▁": so a
// segment after a special piece gets its own "▁", as Hugging Face's Llama tokenizers do), then
// USER_DEFINED pieces are cut out whole and each run between them goes through the model:
// - BPE: start from code points and repeatedly merge the adjacent pair whose concatenation is
//   a piece with the highest score (leftmost on ties);
// - UNIGRAM: Viterbi over the lattice of pieces, maximizing the summed scores; a character
//   no piece covers costs the lowest score minus 10.
// Symbols that are no piece become <0xXX> byte pieces with byte_fallback, else <unk>
// (consecutive ones fused into one); UNUSED pieces are never produced.
// Decoding: "▁" back to spaces, byte pieces collected into UTF-8 (U+FFFD for a bad run), the
// dummy prefix's space dropped; CONTROL and UNKNOWN pieces appear as their text unless
// `skip_special` (as Hugging Face's tokenizers decode them; libsentencepiece drops control
// pieces and writes unknown ones as " ⁇ ").
// Not supported (refused with a message): WORD and CHAR models, treat_whitespace_as_suffix,
// precompiled character maps other than NFKC-based ones. An nmt_nfkc / nfkc map is applied as
// ICU's NFKC (plus lowercase for the *_cf variants) instead of the stored table; the stored
// table adds a few mappings of its own (control characters), so such models may differ from
// libsentencepiece on unusual characters. The denormalizer spec is ignored.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <unordered_map>

#include "core/base/error.h"
#include "core/base/utf8.h"
#include "core/data/text/bpe.h"
#include "core/data/text/byte_level.h"
#include "core/data/text/unicode.h"
#include "plugins/llm_lora/protobuf_reader.h"
#include "plugins/llm_lora/tokenizer.h"

namespace crucible::llm {
namespace {

constexpr std::size_t kMaxPieces = 4'000'000;
constexpr float kUnkPenalty = 10.0f;
const std::string kSpaceMark = "\xE2\x96\x81";  // U+2581 "▁"

enum class PieceType : std::uint8_t {
    kNormal = 1,
    kUnknown = 2,
    kControl = 3,
    kUserDefined = 4,
    kUnused = 5,
    kByte = 6
};

struct Piece {
    std::string text;
    float score = 0.0f;
    PieceType type = PieceType::kNormal;
    int byte = -1;  // the value of a <0xXX> BYTE piece
};

// The parts of a ModelProto the encoder needs, with the format's defaults.
struct ModelSpec {
    std::vector<Piece> pieces;
    std::uint64_t model_type = 1;  // UNIGRAM
    bool byte_fallback = false;
    bool whitespace_suffix = false;
    std::int32_t unk_id = 0, bos_id = 1, eos_id = 2, pad_id = -1;
    std::string normalizer_name;
    bool has_charsmap = false;
    bool add_dummy_prefix = true, remove_extra_whitespaces = true, escape_whitespaces = true;
};

struct StringHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using PieceMap = std::unordered_map<std::string, std::int32_t, StringHash, std::equal_to<>>;

Piece read_piece(ProtoReader r, std::size_t index) {
    const std::string at = "piece " + std::to_string(index);
    Piece p;
    bool has_text = false;
    ProtoField f;
    while (r.next(f)) {
        if (f.number == 1) {
            p.text = std::string(r.as_bytes(f, "pieces.piece"));
            has_text = true;
        } else if (f.number == 2) {
            p.score = r.as_float(f, "pieces.score");
        } else if (f.number == 3) {
            const std::uint64_t type = r.as_uint(f, "pieces.type");
            if (type < 1 || type > 6)
                throw InputError(r.where(), at + ": type " + std::to_string(type) +
                                                " is not a SentencePiece piece type (1..6)");
            p.type = static_cast<PieceType>(type);
        }
    }
    if (!has_text || p.text.empty()) throw InputError(r.where(), at + ": the piece text is empty");
    if (!is_valid_utf8(p.text)) throw InputError(r.where(), at + ": the text is not valid UTF-8");
    if (!std::isfinite(p.score))
        throw InputError(r.where(), at + " '" + p.text + "': the score is not a finite number");
    if (p.type == PieceType::kByte) {
        p.byte = data::text::parse_byte_piece(p.text);
        if (p.byte < 0)
            throw InputError(r.where(), at + " '" + p.text + "': a BYTE piece must read <0xXX>");
    }
    return p;
}

void read_trainer_spec(ProtoReader r, ModelSpec& spec) {
    ProtoField f;
    while (r.next(f)) {
        switch (f.number) {
            case 3:
                spec.model_type = r.as_uint(f, "trainer_spec.model_type");
                break;
            case 24:
                spec.whitespace_suffix = r.as_bool(f, "trainer_spec.treat_whitespace_as_suffix");
                break;
            case 35:
                spec.byte_fallback = r.as_bool(f, "trainer_spec.byte_fallback");
                break;
            case 40:
                spec.unk_id = r.as_int32(f, "trainer_spec.unk_id");
                break;
            case 41:
                spec.bos_id = r.as_int32(f, "trainer_spec.bos_id");
                break;
            case 42:
                spec.eos_id = r.as_int32(f, "trainer_spec.eos_id");
                break;
            case 43:
                spec.pad_id = r.as_int32(f, "trainer_spec.pad_id");
                break;
            default:
                break;  // training parameters
        }
    }
}

void read_normalizer_spec(ProtoReader r, ModelSpec& spec) {
    ProtoField f;
    while (r.next(f)) {
        switch (f.number) {
            case 1:
                spec.normalizer_name = std::string(r.as_bytes(f, "normalizer_spec.name"));
                break;
            case 2:
                spec.has_charsmap = !r.as_bytes(f, "normalizer_spec.precompiled_charsmap").empty();
                break;
            case 3:
                spec.add_dummy_prefix = r.as_bool(f, "normalizer_spec.add_dummy_prefix");
                break;
            case 4:
                spec.remove_extra_whitespaces =
                    r.as_bool(f, "normalizer_spec.remove_extra_whitespaces");
                break;
            case 5:
                spec.escape_whitespaces = r.as_bool(f, "normalizer_spec.escape_whitespaces");
                break;
            default:
                break;  // normalization_rule_tsv: used for training only
        }
    }
}

ModelSpec read_model(std::string_view bytes, const std::string& where) {
    if (bytes.empty()) throw InputError(where, "the file is empty (no SentencePiece model)");
    if (bytes.front() == '{')
        throw InputError(where, "looks like JSON, not a SentencePiece model (tokenizer.model)");
    ModelSpec spec;
    ProtoReader r(bytes, where);
    ProtoField f;
    while (r.next(f)) {
        if (f.number == 1) {
            if (spec.pieces.size() >= kMaxPieces)
                throw InputError(where, "more than " + std::to_string(kMaxPieces) + " pieces");
            spec.pieces.push_back(read_piece(r.message(f, "pieces"), spec.pieces.size()));
        } else if (f.number == 2) {
            read_trainer_spec(r.message(f, "trainer_spec"), spec);
        } else if (f.number == 3) {
            read_normalizer_spec(r.message(f, "normalizer_spec"), spec);
        }
        // 4 (old self-test data) and 5 (denormalizer_spec) are not needed for encoding.
    }
    if (spec.pieces.empty()) throw InputError(where, "the model has no pieces");
    return spec;
}

class SentencePieceTokenizer : public Tokenizer {
  public:
    SentencePieceTokenizer(std::string_view bytes, const std::string& where) : where_(where) {
        ModelSpec spec = read_model(bytes, where);
        check_model(spec);
        pieces_ = std::move(spec.pieces);
        unigram_ = spec.model_type == 1;
        byte_fallback_ = spec.byte_fallback;
        unk_id_ = spec.unk_id;
        bos_id_ = spec.bos_id;
        add_dummy_prefix_ = spec.add_dummy_prefix;
        remove_extra_whitespaces_ = spec.remove_extra_whitespaces;
        escape_whitespaces_ = spec.escape_whitespaces;
        if (spec.has_charsmap) {  // nmt_nfkc, nfkc, nmt_nfkc_cf or nfkc_cf (check_model)
            normalizer_form_ = "NFKC";
            lowercase_ = spec.normalizer_name.ends_with("_cf");
        }
        if (spec.eos_id >= 0) {
            eos_id = spec.eos_id;
            eos_token = pieces_[static_cast<std::size_t>(spec.eos_id)].text;
        }
        index_pieces();
    }

    std::string kind() const override { return "sentencepiece"; }
    std::int64_t vocab_size() const override { return static_cast<std::int64_t>(pieces_.size()); }

    std::optional<std::int64_t> token_id(std::string_view token) const override {
        const auto it = ids_.find(token);
        if (it == ids_.end()) return std::nullopt;
        return it->second;
    }
    std::string token_text(std::int64_t id) const override {
        if (id < 0 || id >= vocab_size()) return {};
        return pieces_[static_cast<std::size_t>(id)].text;
    }

    std::vector<std::int64_t> encode(std::string_view text, bool add_special,
                                     bool parse_special) const override {
        if (!is_valid_utf8(text)) throw InputError("text", "is not valid UTF-8");
        std::vector<std::int64_t> ids;
        if (add_special && bos_id_ >= 0) ids.push_back(bos_id_);
        if (!parse_special) {
            encode_segment(text, ids);
            return ids;
        }
        std::size_t pos = 0, segment = 0;
        while (pos < text.size()) {
            const std::int32_t hit = match_at(special_by_byte_, text, pos);
            if (hit < 0) {
                pos += decode_utf8_char(text, pos).length;
                continue;
            }
            encode_segment(text.substr(segment, pos - segment), ids);
            ids.push_back(hit);
            pos = segment = pos + pieces_[static_cast<std::size_t>(hit)].text.size();
        }
        encode_segment(text.substr(segment), ids);
        return ids;
    }

    std::string decode(const std::vector<std::int64_t>& ids, bool skip_special) const override {
        std::string out, bytes;
        auto flush = [&] {
            if (!bytes.empty()) out += utf8_lossy(bytes);
            bytes.clear();
        };
        for (auto id : ids) {
            if (id < 0 || id >= vocab_size())
                throw InputError("ids", "token id " + std::to_string(id) +
                                            " is outside the vocabulary (0.." +
                                            std::to_string(vocab_size() - 1) + ")");
            const Piece& p = pieces_[static_cast<std::size_t>(id)];
            if (p.type == PieceType::kByte) {
                bytes += static_cast<char>(p.byte);
                continue;
            }
            flush();
            if (skip_special && (p.type == PieceType::kControl || p.type == PieceType::kUnknown))
                continue;
            if (!escape_whitespaces_ || p.type == PieceType::kControl ||
                p.type == PieceType::kUnknown) {
                out += p.text;
                continue;
            }
            for (std::size_t i = 0; i < p.text.size();) {
                if (p.text.compare(i, kSpaceMark.size(), kSpaceMark) == 0) {
                    out += ' ';
                    i += kSpaceMark.size();
                } else {
                    out += p.text[i++];
                }
            }
        }
        flush();
        // The space of the dummy prefix.
        if (add_dummy_prefix_ && out.starts_with(' ')) out.erase(0, 1);
        return out;
    }

  private:
    void check_model(const ModelSpec& spec) const {
        if (spec.model_type == 3 || spec.model_type == 4)
            throw InputError(where_, std::string("model type ") +
                                         (spec.model_type == 3 ? "WORD" : "CHAR") +
                                         " is not supported (only UNIGRAM and BPE)");
        if (spec.model_type != 1 && spec.model_type != 2)
            throw InputError(where_, "trainer_spec.model_type " + std::to_string(spec.model_type) +
                                         " is not a SentencePiece model type");
        if (spec.whitespace_suffix)
            throw InputError(where_, "trainer_spec.treat_whitespace_as_suffix is not supported");
        if (spec.has_charsmap && !nfkc_name(spec.normalizer_name))
            throw InputError(where_, "normalizer '" + utf8_lossy(spec.normalizer_name) +
                                         "' with a precompiled character map is not supported "
                                         "(only identity and NFKC-based ones)");
        const auto n = static_cast<std::int64_t>(spec.pieces.size());
        auto check_id = [&](std::int32_t id, const char* name) {
            if (id < -1 || id >= n)
                throw InputError(where_, std::string("trainer_spec.") + name + " " +
                                             std::to_string(id) + " is outside the " +
                                             std::to_string(n) + " pieces");
        };
        check_id(spec.unk_id, "unk_id");
        check_id(spec.bos_id, "bos_id");
        check_id(spec.eos_id, "eos_id");
        check_id(spec.pad_id, "pad_id");
        if (spec.unk_id < 0 && !spec.byte_fallback)
            throw InputError(where_, "trainer_spec.unk_id is -1 without byte_fallback");
        if (spec.unk_id >= 0 &&
            spec.pieces[static_cast<std::size_t>(spec.unk_id)].type != PieceType::kUnknown)
            throw InputError(where_, "trainer_spec.unk_id " + std::to_string(spec.unk_id) +
                                         " names piece '" +
                                         spec.pieces[static_cast<std::size_t>(spec.unk_id)].text +
                                         "', which is not of type UNKNOWN");
    }

    static bool nfkc_name(const std::string& name) {
        return name == "nmt_nfkc" || name == "nfkc" || name == "nmt_nfkc_cf" || name == "nfkc_cf";
    }

    void index_pieces() {
        ids_.reserve(pieces_.size());
        std::fill(std::begin(byte_ids_), std::end(byte_ids_), -1);
        min_score_ = std::numeric_limits<float>::max();
        for (std::size_t i = 0; i < pieces_.size(); ++i) {
            const Piece& p = pieces_[i];
            const auto id = static_cast<std::int32_t>(i);
            const auto [it, inserted] = ids_.emplace(p.text, id);
            if (!inserted)
                throw InputError(where_, "piece '" + p.text + "' appears twice (ids " +
                                             std::to_string(it->second) + " and " +
                                             std::to_string(i) + ")");
            switch (p.type) {
                case PieceType::kByte:
                    if (byte_ids_[p.byte] >= 0)
                        throw InputError(where_, "byte piece " + p.text + " appears twice");
                    byte_ids_[p.byte] = id;
                    break;
                case PieceType::kControl:
                case PieceType::kUnknown:
                    special_by_byte_[static_cast<unsigned char>(p.text[0])].push_back(id);
                    break;
                case PieceType::kUserDefined:
                    user_by_byte_[static_cast<unsigned char>(p.text[0])].push_back(id);
                    break;
                case PieceType::kNormal:
                    min_score_ = std::min(min_score_, p.score);
                    if (unigram_) add_prefixes(p.text, id);
                    break;
                case PieceType::kUnused:
                    break;
            }
        }
        if (min_score_ == std::numeric_limits<float>::max()) min_score_ = 0.0f;
        if (byte_fallback_)
            for (int b = 0; b < 256; ++b)
                if (byte_ids_[b] < 0)
                    throw InputError(
                        where_, "byte_fallback is on but the BYTE piece " +
                                    data::text::byte_piece_name(static_cast<unsigned char>(b)) +
                                    " is missing");
        // Longest first: leftmost-longest matching.
        auto longest_first = [&](std::vector<std::int32_t>& v) {
            std::stable_sort(v.begin(), v.end(), [&](std::int32_t a, std::int32_t b) {
                return pieces_[static_cast<std::size_t>(a)].text.size() >
                       pieces_[static_cast<std::size_t>(b)].text.size();
            });
        };
        for (auto& v : special_by_byte_)
            longest_first(v);
        for (auto& v : user_by_byte_)
            longest_first(v);
    }

    // Unigram lattice lookup: every code-point prefix of a piece maps to -1 unless it is a
    // piece itself, so that extending a candidate stops as soon as no piece can match.
    void add_prefixes(const std::string& text, std::int32_t id) {
        for (std::size_t i = 0; i < text.size();) {
            i += decode_utf8_char(text, i).length;
            const auto [it, inserted] = lattice_.emplace(text.substr(0, i), -1);
            if (i == text.size()) it->second = id;
        }
    }

    std::int32_t match_at(const std::vector<std::int32_t> (&table)[256], std::string_view text,
                          std::size_t pos) const {
        for (std::int32_t id : table[static_cast<unsigned char>(text[pos])]) {
            const std::string& t = pieces_[static_cast<std::size_t>(id)].text;
            if (text.compare(pos, t.size(), t) == 0) return id;
        }
        return -1;
    }

    std::string normalize(std::string_view segment) const {
        std::string s(segment);
        if (!normalizer_form_.empty()) s = data::text::unicode_normalize(s, normalizer_form_);
        if (lowercase_) s = data::text::unicode_lowercase(s);
        if (remove_extra_whitespaces_) {
            std::string t;
            for (char c : s) {
                if (c == ' ' && (t.empty() || t.back() == ' ')) continue;
                t += c;
            }
            if (!t.empty() && t.back() == ' ') t.pop_back();
            s = std::move(t);
        }
        if (s.empty()) return s;
        const std::string space = escape_whitespaces_ ? kSpaceMark : std::string(" ");
        std::string out = add_dummy_prefix_ ? space : std::string();
        for (char c : s) {
            if (c == ' ')
                out += space;
            else
                out += c;
        }
        return out;
    }

    void encode_segment(std::string_view segment, std::vector<std::int64_t>& ids) const {
        if (segment.empty()) return;
        const std::string s = normalize(segment);
        // USER_DEFINED pieces are taken whole; the runs between them go through the model.
        std::size_t pos = 0, run = 0;
        while (pos < s.size()) {
            const std::int32_t hit = match_at(user_by_byte_, s, pos);
            if (hit < 0) {
                pos += decode_utf8_char(s, pos).length;
                continue;
            }
            encode_run(std::string_view(s).substr(run, pos - run), ids);
            ids.push_back(hit);
            pos = run = pos + pieces_[static_cast<std::size_t>(hit)].text.size();
        }
        encode_run(std::string_view(s).substr(run), ids);
    }

    void encode_run(std::string_view s, std::vector<std::int64_t>& ids) const {
        if (s.empty()) return;
        if (unigram_)
            encode_unigram(s, ids);
        else
            encode_bpe(s, ids);
    }

    // The id of a piece that the model may produce from text, or -1.
    std::int32_t model_piece(std::string_view text) const {
        const auto it = ids_.find(text);
        if (it == ids_.end()) return -1;
        const PieceType t = pieces_[static_cast<std::size_t>(it->second)].type;
        return t == PieceType::kNormal || t == PieceType::kUserDefined ? it->second : -1;
    }

    // A symbol that is no piece: its bytes, or <unk> (one for a run of them).
    void emit_unknown(std::string_view symbol, std::vector<std::int64_t>& ids,
                      bool& last_unk) const {
        if (byte_fallback_) {
            for (unsigned char b : symbol)
                ids.push_back(byte_ids_[b]);
            last_unk = false;
            return;
        }
        if (!last_unk) ids.push_back(unk_id_);
        last_unk = true;
    }

    // BPE symbols are spans of `s`, packed as start << 32 | length into the loop's integers: a
    // pair merges when its concatenation is a piece, the best score first.
    static std::int64_t pack_span(std::size_t start, std::size_t length) {
        return static_cast<std::int64_t>((static_cast<std::uint64_t>(start) << 32) | length);
    }
    static std::string_view unpack_span(std::string_view s, std::int64_t packed) {
        const auto bits = static_cast<std::uint64_t>(packed);
        return s.substr(static_cast<std::size_t>(bits >> 32),
                        static_cast<std::size_t>(bits & 0xFFFFFFFFu));
    }

    void encode_bpe(std::string_view s, std::vector<std::int64_t>& ids) const {
        if (s.size() > 0xFFFFFFFFu) throw InputError("text", "is over 4 GiB");
        std::vector<std::int64_t> symbols;
        for (std::size_t i = 0; i < s.size();) {
            const std::size_t n = decode_utf8_char(s, i).length;
            symbols.push_back(pack_span(i, n));
            i += n;
        }
        data::text::bpe_merge(symbols, [&](std::int64_t left, std::int64_t right) {
            std::optional<data::text::BpeMerge> merge;
            const std::string_view l = unpack_span(s, left), r = unpack_span(s, right);
            const auto start = static_cast<std::size_t>(l.data() - s.data());
            const std::int32_t id = model_piece(s.substr(start, l.size() + r.size()));
            if (id >= 0)
                merge = data::text::BpeMerge{
                    -static_cast<double>(pieces_[static_cast<std::size_t>(id)].score),
                    pack_span(start, l.size() + r.size())};
            return merge;
        });
        bool last_unk = false;
        for (const std::int64_t packed : symbols) {
            const std::string_view symbol = unpack_span(s, packed);
            const std::int32_t id = model_piece(symbol);
            if (id >= 0) {
                ids.push_back(id);
                last_unk = false;
            } else {
                emit_unknown(symbol, ids, last_unk);
            }
        }
    }

    void encode_unigram(std::string_view s, std::vector<std::int64_t>& ids) const {
        const std::size_t n = s.size();
        // The arithmetic of libsentencepiece's unigram encoder, so that near-ties between
        // segmentations come out as there (seen on a model its trainer wrote): a path's score is
        // kept in float, a piece's candidate is computed and compared in double, an unknown
        // character's in float.
        constexpr float kNone = -std::numeric_limits<float>::infinity();
        const float unk_score = min_score_ - kUnkPenalty;
        // best[j]: the best score of a segmentation of s[0, j); from[j] / piece[j]: its last
        // piece (-1: an unknown character).
        std::vector<float> best(n + 1, kNone);
        std::vector<std::size_t> from(n + 1, 0);
        std::vector<std::int32_t> piece(n + 1, -1);
        best[0] = 0.0f;
        for (std::size_t i = 0; i < n;) {
            const std::size_t char_end = i + decode_utf8_char(s, i).length;
            bool single = false;
            for (std::size_t j = char_end; j <= n;) {
                const auto it = lattice_.find(s.substr(i, j - i));
                if (it == lattice_.end()) break;
                if (it->second >= 0) {
                    const double score =
                        static_cast<double>(best[i]) +
                        static_cast<double>(pieces_[static_cast<std::size_t>(it->second)].score);
                    if (score > static_cast<double>(best[j])) {
                        best[j] = static_cast<float>(score);
                        from[j] = i;
                        piece[j] = it->second;
                    }
                    single = single || j == char_end;
                }
                if (j == n) break;
                j += decode_utf8_char(s, j).length;
            }
            if (!single && best[i] + unk_score > best[char_end]) {
                best[char_end] = best[i] + unk_score;
                from[char_end] = i;
                piece[char_end] = -1;
            }
            i = char_end;
        }
        std::vector<std::pair<std::size_t, std::size_t>> path;  // (end, start)
        for (std::size_t j = n; j > 0; j = from[j])
            path.emplace_back(j, from[j]);
        bool last_unk = false;
        for (auto it = path.rbegin(); it != path.rend(); ++it) {
            const std::int32_t id = piece[it->first];
            if (id >= 0) {
                ids.push_back(id);
                last_unk = false;
            } else {
                emit_unknown(s.substr(it->second, it->first - it->second), ids, last_unk);
            }
        }
    }

    std::string where_;
    std::vector<Piece> pieces_;
    PieceMap ids_;      // every piece
    PieceMap lattice_;  // unigram: prefixes of NORMAL pieces
    bool unigram_ = false, byte_fallback_ = false;
    std::int32_t unk_id_ = 0, bos_id_ = 1;
    std::int32_t byte_ids_[256] = {};
    float min_score_ = 0.0f;
    std::vector<std::int32_t> special_by_byte_[256];  // CONTROL and UNKNOWN, longest first
    std::vector<std::int32_t> user_by_byte_[256];     // USER_DEFINED, longest first
    std::string normalizer_form_;                     // "" or "NFKC"
    bool lowercase_ = false;
    bool add_dummy_prefix_ = true, remove_extra_whitespaces_ = true, escape_whitespaces_ = true;
};

}  // namespace

std::unique_ptr<Tokenizer> make_sentencepiece_tokenizer(std::string_view model_bytes,
                                                        const std::string& where) {
    return std::make_unique<SentencePieceTokenizer>(model_bytes, where);
}

}  // namespace crucible::llm
