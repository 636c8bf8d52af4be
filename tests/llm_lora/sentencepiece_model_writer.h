#pragma once
// Writes SentencePiece model protos (tokenizer.model) for the tests: a small Protocol Buffers
// writer (written here so that the reader under test does not check itself), a ModelProto with
// Llama's settings, and the real Llama 2 vocabulary of ../shared/fixtures/tokenizers as such a
// model. Used by sentencepiece_test.cpp and by the comparison with libsentencepiece
// (sentencepiece_library_test.cpp).
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/base/json.h"

namespace crucible::llm::test_models {

// Protocol Buffers wire format, the writing side (written here so that the reader under test
// does not check itself).
class ProtoWriter {
  public:
    ProtoWriter& varint(std::uint32_t field, std::uint64_t v) {
        tag(field, 0);
        raw_varint(v);
        return *this;
    }
    ProtoWriter& int32(std::uint32_t field, std::int32_t v) {
        // Negative values take ten bytes: the 64-bit sign extension.
        return varint(field, static_cast<std::uint64_t>(static_cast<std::int64_t>(v)));
    }
    ProtoWriter& fixed32(std::uint32_t field, float v) {
        tag(field, 5);
        const auto bits = std::bit_cast<std::uint32_t>(v);
        for (int i = 0; i < 4; ++i)
            out_ += static_cast<char>((bits >> (8 * i)) & 0xFF);
        return *this;
    }
    ProtoWriter& fixed64(std::uint32_t field, std::uint64_t v) {
        tag(field, 1);
        for (int i = 0; i < 8; ++i)
            out_ += static_cast<char>((v >> (8 * i)) & 0xFF);
        return *this;
    }
    ProtoWriter& bytes(std::uint32_t field, std::string_view v) {
        tag(field, 2);
        raw_varint(v.size());
        out_ += v;
        return *this;
    }
    ProtoWriter& message(std::uint32_t field, const ProtoWriter& m) {
        return bytes(field, m.str());
    }
    ProtoWriter& tag(std::uint32_t field, unsigned wire) {
        raw_varint((static_cast<std::uint64_t>(field) << 3) | wire);
        return *this;
    }
    ProtoWriter& raw_varint(std::uint64_t v) {
        do {
            const auto low = static_cast<unsigned char>(v & 0x7F);
            v >>= 7;
            out_ += static_cast<char>(v != 0 ? (low | 0x80) : low);
        } while (v != 0);
        return *this;
    }
    const std::string& str() const { return out_; }

  private:
    std::string out_;
};

enum PieceType { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kByte = 6 };

struct TestPiece {
    std::string text;
    float score = 0.0f;
    int type = kNormal;
};

// A ModelProto with Llama's settings unless changed.
struct TestModel {
    std::vector<TestPiece> pieces{
        {"<unk>", 0, kUnknown}, {"<s>", 0, kControl}, {"</s>", 0, kControl}};
    int model_type = 2;  // BPE
    bool byte_fallback = true;
    std::int32_t unk_id = 0, bos_id = 1, eos_id = 2;
    std::string normalizer = "identity", charsmap;
    bool add_dummy_prefix = true, remove_extra_whitespaces = false;

    std::int64_t add(const std::string& text, float score = 0.0f, int type = kNormal) {
        pieces.push_back({text, score, type});
        return static_cast<std::int64_t>(pieces.size()) - 1;
    }
    // <0x00>..<0xFF>; returns the id of <0x00>.
    std::int64_t add_bytes() {
        const auto first = static_cast<std::int64_t>(pieces.size());
        for (int b = 0; b < 256; ++b) {
            char name[8];
            std::snprintf(name, sizeof name, "<0x%02X>", b);
            add(name, 0.0f, kByte);
        }
        return first;
    }

    std::string bytes() const {
        ProtoWriter m;
        for (const auto& p : pieces) {
            ProtoWriter piece;
            piece.bytes(1, p.text)
                .fixed32(2, p.score)
                .varint(3, static_cast<std::uint64_t>(p.type));
            m.message(1, piece);
        }
        // Fields the reader does not use come along, of every wire type: they are skipped.
        ProtoWriter trainer;
        trainer.bytes(1, "corpus.txt")
            .varint(3, static_cast<std::uint64_t>(model_type))
            .varint(4, pieces.size())
            .fixed32(10, 0.9995f)
            .varint(35, byte_fallback ? 1 : 0)
            .int32(40, unk_id)
            .int32(41, bos_id)
            .int32(42, eos_id)
            .int32(43, -1)
            .bytes(44, " \xE2\x81\x87 ");
        ProtoWriter norm;
        norm.bytes(1, normalizer)
            .bytes(2, charsmap)
            .varint(3, add_dummy_prefix ? 1 : 0)
            .varint(4, remove_extra_whitespaces ? 1 : 0)
            .varint(5, 1);
        m.message(2, trainer).message(3, norm).fixed64(200, 42);
        return m.str();
    }
};

// The Llama 2 vocabulary of tokenizer.json as a tokenizer.model. Hugging Face's converter
// wrote the merges from the SentencePiece model: all merges that yield one piece are
// consecutive, in the order of the pieces' scores (the test checks this). A score of
// -(rank of the piece's first merge) therefore orders the pieces as the original scores did
// (including "▁▁" and "▁▁▁▁", which Llama's file scores -1e9 so that their merges come last),
// and SentencePiece BPE, which merges the pair whose concatenation scores highest, applies the
// merge of lowest rank as HF does. The two can differ only when two different pairs yielding
// the same piece compete in one word (SentencePiece takes the leftmost); the texts do not hit
// that. Pieces no merge yields (single characters) never result from a merge; their score
// does not matter.
inline TestModel llama2_model(const Json& tokenizer) {
    const Json& model = tokenizer["model"];
    const Json& vocab = model["vocab"];
    std::vector<std::string> by_id(vocab.size());
    for (const auto& [text, id] : vocab.items())
        by_id.at(id.get<std::size_t>()) = text;
    std::unordered_map<std::string, std::size_t> first_merge;
    std::size_t rank = 0, last_first = 0;
    for (const auto& m : model["merges"]) {
        std::string piece;
        if (m.is_string()) {
            piece = m.get<std::string>();
            piece.erase(piece.find(' ', 1), 1);
        } else {
            piece = m[0].get<std::string>() + m[1].get<std::string>();
        }
        const std::size_t first = first_merge.emplace(piece, rank).first->second;
        EXPECT_GE(first, last_first) << "merge " << rank << " (" << piece
                                     << "): the merges of one piece are not consecutive";
        last_first = first;
        ++rank;
    }
    TestModel out;
    out.pieces.clear();
    for (std::size_t id = 0; id < by_id.size(); ++id) {
        const std::string& t = by_id[id];
        int type = kNormal;
        if (id == 0) type = kUnknown;
        if (id == 1 || id == 2) type = kControl;
        if (t.size() == 6 && t.starts_with("<0x") && id < 259) type = kByte;
        const auto it = first_merge.find(t);
        const float score = type != kNormal           ? 0.0f
                            : it != first_merge.end() ? -static_cast<float>(it->second)
                                                      : -static_cast<float>(rank + id);
        out.pieces.push_back({t, score, type});
    }
    return out;
}

}  // namespace crucible::llm::test_models
