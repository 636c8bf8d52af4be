// tokenizer.model (SentencePiece ModelProto; Llama 1/2, Mistral, T5-style unigram models) through
// libsentencepiece, which shares a process with the torch wheel (plugins/llm_lora/README.md).
// The library loads the model, normalizes (the model's own character map), encodes and decodes;
// this file adds what the Tokenizer interface asks and the library lacks, as Hugging Face's
// Llama tokenizers do it:
// - parse_special: CONTROL and UNKNOWN pieces written in the text ("<s>", "</s>", "<unk>") are
//   split out first (leftmost, longest) and become their ids; every other segment is encoded
//   by the library on its own, so a segment after a special piece gets its own dummy prefix.
//   Without parse_special the whole text goes to the library, which never produces them.
// - add_special: the library's BOS (none when the model has no <s> control piece).
// - decode: CONTROL and UNKNOWN pieces appear as their text unless skip_special (the library
//   drops control pieces and writes unknown ones as " ⁇ "); the runs between them are decoded
//   by the library, and only the start of the whole text loses the dummy prefix's space
//   (so {<s>, ▁a} reads "<s> a", as Hugging Face decodes it).
// - errors: a file the library refuses, or one whose character map would make it read out of
//   bounds (sentencepiece_charsmap.h), is an InputError naming the file; so are pieces that are
//   not UTF-8 or scores that are no number, which the library would take.
#include <sentencepiece_processor.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>

#include "core/base/error.h"
#include "core/base/utf8.h"
#include "plugins/llm_lora/sentencepiece_charsmap.h"
#include "plugins/llm_lora/tokenizer.h"

namespace crucible::llm {
namespace {

class SentencePieceTokenizer : public Tokenizer {
  public:
    SentencePieceTokenizer(std::string_view bytes, const std::string& where) : where_(where) {
        if (bytes.empty()) throw InputError(where, "the file is empty (no SentencePiece model)");
        if (bytes.front() == '{')
            throw InputError(where, "looks like JSON, not a SentencePiece model (tokenizer.model)");
        if (bytes.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()))
            throw InputError(where, "is over 2 GiB, more than protobuf reads");
        check_sentencepiece_charsmaps(bytes, where);
        sentencepiece::util::Status status;
        try {
            status = sp_.LoadFromSerializedProto(bytes);
        } catch (const std::exception& e) {  // darts-clone throws on a trie it cannot build
            throw InputError(where,
                             std::string("libsentencepiece cannot load the model: ") + e.what());
        }
        if (!status.ok()) {
            const std::string message = status.message();
            // A failed parse reads as the library's source line; say it plainly.
            if (message.find("ParseFromArray") != std::string::npos)
                throw InputError(where,
                                 "is not a SentencePiece model proto (truncated or "
                                 "malformed protobuf data)");
            throw InputError(where, "libsentencepiece cannot load the model: " + message);
        }
        check_pieces();
        if (sp_.eos_id() >= 0) {
            eos_id = sp_.eos_id();
            eos_token = sp_.IdToPiece(sp_.eos_id());
        }
        pick_sentinel();
    }

    std::string kind() const override { return "sentencepiece"; }
    std::int64_t vocab_size() const override { return sp_.GetPieceSize(); }

    std::optional<std::int64_t> token_id(std::string_view token) const override {
        // The library answers unk_id for a piece it does not know.
        const int id = sp_.PieceToId(token);
        if (id < 0 || sp_.IdToPiece(id) != token) return std::nullopt;
        return id;
    }
    std::string token_text(std::int64_t id) const override {
        if (id < 0 || id >= vocab_size()) return {};
        return sp_.IdToPiece(static_cast<int>(id));
    }

    std::vector<std::int64_t> encode(std::string_view text, bool add_special,
                                     bool parse_special) const override {
        if (!is_valid_utf8(text)) throw InputError("text", "is not valid UTF-8");
        std::vector<std::int64_t> ids;
        if (add_special && sp_.bos_id() >= 0) ids.push_back(sp_.bos_id());
        if (!parse_special) {
            encode_segment(text, ids);
            return ids;
        }
        std::size_t pos = 0, segment = 0;
        while (pos < text.size()) {
            const int hit = special_at(text, pos);
            if (hit < 0) {
                pos += decode_utf8_char(text, pos).length;
                continue;
            }
            encode_segment(text.substr(segment, pos - segment), ids);
            ids.push_back(hit);
            pos = segment = pos + sp_.IdToPiece(hit).size();
        }
        encode_segment(text.substr(segment), ids);
        return ids;
    }

    std::string decode(const std::vector<std::int64_t>& ids, bool skip_special) const override {
        std::string out;
        std::vector<int> run;
        const auto flush = [&] {
            if (!run.empty()) out += decode_run(run, !out.empty());
            run.clear();
        };
        for (const auto id : ids) {
            if (id < 0 || id >= vocab_size())
                throw InputError("ids", "token id " + std::to_string(id) +
                                            " is outside the vocabulary (0.." +
                                            std::to_string(vocab_size() - 1) + ")");
            const int i = static_cast<int>(id);
            if (!special(i)) {
                run.push_back(i);
                continue;
            }
            flush();
            if (!skip_special) out += sp_.IdToPiece(i);
        }
        flush();
        return out;
    }

  private:
    bool special(int id) const { return sp_.IsControl(id) || sp_.IsUnknown(id); }

    // What the library takes and our layer does not: pieces that are not UTF-8 (they would
    // decode to text that is not UTF-8) and scores that are no number (they break the order of
    // the BPE merge queue). Also indexes the special pieces.
    void check_pieces() {
        const int n = sp_.GetPieceSize();
        for (int id = 0; id < n; ++id) {
            const std::string& text = sp_.IdToPiece(id);
            const std::string at = "piece " + std::to_string(id);
            if (!is_valid_utf8(text))
                throw InputError(where_, at + ": the text is not valid UTF-8");
            if (!std::isfinite(sp_.GetScore(id)))
                throw InputError(where_, at + " '" + text + "': the score is not a finite number");
            if (special(id)) special_by_byte_[static_cast<unsigned char>(text[0])].push_back(id);
        }
        for (auto& v : special_by_byte_)  // longest first: leftmost-longest matching
            std::stable_sort(v.begin(), v.end(), [&](int a, int b) {
                return sp_.IdToPiece(a).size() > sp_.IdToPiece(b).size();
            });
    }

    // decode_run glues a run after earlier text by decoding it behind a piece whose own text is
    // known (the library strips the dummy prefix's space only at the start of what it decodes):
    // <unk> (" ⁇ ") unless the model sets its surface empty, then the first piece that
    // decodes to text.
    void pick_sentinel() {
        const int n = sp_.GetPieceSize();
        for (int id = -1; id < n; ++id) {
            const int candidate = id < 0 ? sp_.unk_id() : id;
            if (candidate < 0 || sp_.IsControl(candidate)) continue;
            std::string text;
            if (sp_.Decode(std::vector<int>{candidate}, &text).ok() && !text.empty()) {
                sentinel_ = candidate;
                sentinel_text_ = std::move(text);
                return;
            }
        }
    }

    std::string decode_run(const std::vector<int>& run, bool after_text) const {
        std::string text;
        if (after_text && sentinel_ >= 0) {
            std::vector<int> glued{sentinel_};
            glued.insert(glued.end(), run.begin(), run.end());
            check_status(sp_.Decode(glued, &text), "decode");
            // A denormalizer could rewrite the sentinel's text; then decode the run alone.
            if (text.starts_with(sentinel_text_)) return text.substr(sentinel_text_.size());
            text.clear();
        }
        check_status(sp_.Decode(run, &text), "decode");
        return text;
    }

    int special_at(std::string_view text, std::size_t pos) const {
        for (const int id : special_by_byte_[static_cast<unsigned char>(text[pos])]) {
            const std::string& t = sp_.IdToPiece(id);
            if (text.compare(pos, t.size(), t) == 0) return id;
        }
        return -1;
    }

    void encode_segment(std::string_view segment, std::vector<std::int64_t>& ids) const {
        if (segment.empty()) return;
        std::vector<int> out;
        check_status(sp_.Encode(segment, &out), "encode");
        ids.insert(ids.end(), out.begin(), out.end());
    }

    void check_status(const sentencepiece::util::Status& status, const char* what) const {
        if (!status.ok())
            throw Error(where_ + ": libsentencepiece could not " + what + ": " + status.message());
    }

    std::string where_;
    sentencepiece::SentencePieceProcessor sp_;
    std::vector<int> special_by_byte_[256];  // CONTROL and UNKNOWN, longest first
    int sentinel_ = -1;
    std::string sentinel_text_;
};

}  // namespace

std::unique_ptr<Tokenizer> make_sentencepiece_tokenizer(std::string_view model_bytes,
                                                        const std::string& where) {
    return std::make_unique<SentencePieceTokenizer>(model_bytes, where);
}

}  // namespace crucible::llm
