#include "plugins/llm_lora/sentencepiece_charsmap.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/base/error.h"
#include "plugins/llm_lora/protobuf_reader.h"

namespace crucible::llm {
namespace {

// libsentencepiece's normalizer keeps this many prefix matches (Normalizer::kMaxTrieResultsSize).
constexpr int kMaxMatchesOnAPath = 32;

// darts-clone's DoubleArrayUnit, as the library reads it.
bool has_leaf(std::uint32_t u) {
    return ((u >> 8) & 1) == 1;
}
std::uint32_t value(std::uint32_t u) {
    return u & ((1u << 31) - 1);
}
std::uint32_t label(std::uint32_t u) {
    return u & ((1u << 31) | 0xFF);
}
std::uint32_t offset(std::uint32_t u) {
    return (u >> 10) << ((u & (1u << 9)) >> 6);
}

}  // namespace

void check_precompiled_charsmap(std::string_view blob, const std::string& where) {
    const auto bad = [&](const std::string& what) {
        throw InputError(where, "the precompiled character map " + what);
    };
    if (blob.size() <= 4) bad("is shorter than its header");
    std::uint32_t trie_size = 0;
    for (int i = 0; i < 4; ++i)
        trie_size |= static_cast<std::uint32_t>(static_cast<unsigned char>(blob[i])) << (8 * i);
    if (trie_size > blob.size() - 4)
        bad("declares a trie of " + std::to_string(trie_size) + " bytes, past its end");
    const std::string_view trie = blob.substr(4, trie_size);
    const std::string_view strings = blob.substr(4 + trie_size);
    const std::size_t n = trie.size() / 4;
    if (n == 0) bad("has an empty trie");
    const auto unit = [&](std::size_t i) {
        std::uint32_t u = 0;
        std::memcpy(&u, trie.data() + 4 * i, 4);  // little-endian, as the library reads it
        return u;
    };
    // The library reads unit p ^ c for every input byte c at a node whose base is p: all 256
    // must lie in the array (darts-clone sizes it in blocks of 256, so a real map passes).
    const auto check_base = [&](std::size_t p) {
        if ((p | 0xFF) >= n) bad("has a trie node outside its " + std::to_string(n) + " units");
    };
    // Depth-first over node bases, each once (darts-clone shares suffixes, so a base can have
    // several parents): no cycle, every leaf's string inside the map, and at most 32 leaves on
    // any path (the library's fixed array of matches).
    enum : std::uint8_t { kNew, kOpen, kDone };
    std::vector<std::uint8_t> state(n, kNew), leaves_below(n, 0);
    struct Frame {
        std::size_t base;
        unsigned next_byte = 0;
        int best = 0;
        int pending_leaf = 0;  // the edge to the child being walked has a leaf
    };
    std::vector<Frame> stack;
    const std::size_t root = offset(unit(0));
    check_base(root);
    stack.push_back({root});
    state[root] = kOpen;
    while (!stack.empty()) {
        Frame& f = stack.back();
        if (f.next_byte == 256) {
            const int best = f.best;
            state[f.base] = kDone;
            leaves_below[f.base] = static_cast<std::uint8_t>(best);
            stack.pop_back();
            if (!stack.empty()) {
                Frame& parent = stack.back();
                parent.best = std::max(parent.best, parent.pending_leaf + best);
                if (parent.best > kMaxMatchesOnAPath)
                    bad("has more than " + std::to_string(kMaxMatchesOnAPath) +
                        " matches on one path");
            }
            continue;
        }
        const unsigned c = f.next_byte++;
        const std::size_t at = f.base ^ c;
        const std::uint32_t u = unit(at);
        if (label(u) != c) continue;
        const std::size_t child = at ^ offset(u);
        check_base(child);
        const int leaf = has_leaf(u) ? 1 : 0;
        if (leaf) {
            const std::uint32_t v = value(unit(child));
            if (v >= strings.size() || strings.find('\0', v) == std::string_view::npos)
                bad("has a replacement string outside the map");
        }
        if (state[child] == kOpen) bad("has a cycle in its trie");
        if (state[child] == kDone) {
            f.best = std::max(f.best, leaf + leaves_below[child]);
            if (f.best > kMaxMatchesOnAPath)
                bad("has more than " + std::to_string(kMaxMatchesOnAPath) + " matches on one path");
            continue;
        }
        f.pending_leaf = leaf;
        state[child] = kOpen;
        stack.push_back({child});  // invalidates f
    }
}

void check_sentencepiece_charsmaps(std::string_view model_bytes, const std::string& where) {
    ProtoReader model(model_bytes, where);
    ProtoField f;
    while (model.next(f)) {
        // ModelProto: 3 normalizer_spec, 5 denormalizer_spec; NormalizerSpec: 2
        // precompiled_charsmap. A field of another wire type is an unknown field to protobuf,
        // which the library never reads.
        if ((f.number != 3 && f.number != 5) || f.type != WireType::kBytes) continue;
        ProtoReader spec =
            model.message(f, f.number == 3 ? "normalizer_spec" : "denormalizer_spec");
        ProtoField g;
        while (spec.next(g))
            if (g.number == 2 && g.type == WireType::kBytes && !g.bytes.empty())
                check_precompiled_charsmap(g.bytes, where);
    }
}

}  // namespace crucible::llm
