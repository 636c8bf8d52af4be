// core/data/text/bpe.h: the merge order (lowest rank, leftmost on ties), stale candidates, the
// same result as the reference loop of GPT-2 and CLIP on trainer-style merge tables, the one
// documented difference on a hand-made table, and long words in O(n log n).
#include "core/data/text/bpe.h"

#include <gtest/gtest.h>

#include <chrono>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <utility>
#include <vector>

namespace crucible::data::text {
namespace {

using Symbols = std::vector<std::int64_t>;
using Table = std::map<std::pair<std::int64_t, std::int64_t>, BpeMerge>;

Symbols merged(Symbols symbols, const Table& table) {
    bpe_merge(symbols, [&](std::int64_t a, std::int64_t b) -> std::optional<BpeMerge> {
        const auto it = table.find({a, b});
        if (it == table.end()) return std::nullopt;
        return it->second;
    });
    return symbols;
}

// GPT-2's and CLIP's reference loop, quadratic: find the lowest-rank pair, merge all its
// occurrences left to right, repeat.
Symbols reference_merged(Symbols s, const Table& table) {
    while (s.size() > 1) {
        double best = std::numeric_limits<double>::infinity();
        std::pair<std::int64_t, std::int64_t> pair;
        for (std::size_t i = 0; i + 1 < s.size(); ++i) {
            const auto it = table.find({s[i], s[i + 1]});
            if (it != table.end() && it->second.rank < best) {
                best = it->second.rank;
                pair = it->first;
            }
        }
        if (best == std::numeric_limits<double>::infinity()) break;
        Symbols next;
        for (std::size_t i = 0; i < s.size();) {
            if (i + 1 < s.size() && s[i] == pair.first && s[i + 1] == pair.second) {
                next.push_back(table.at(pair).merged);
                i += 2;
            } else {
                next.push_back(s[i++]);
            }
        }
        s = std::move(next);
    }
    return s;
}

// Symbols 0..3 are a b c d.
constexpr std::int64_t a = 0, b = 1, c = 2, d = 3;

TEST(BpeMerge, EmptyAndSingleSymbolsStayAsTheyAre) {
    const Table table{{{a, b}, {0, 10}}};
    EXPECT_EQ(merged({}, table), Symbols{});
    EXPECT_EQ(merged({a}, table), Symbols{a});
    EXPECT_EQ(merged({a, c}, table), (Symbols{a, c}));
}

TEST(BpeMerge, LowestRankMergesFirst) {
    // a b c: bc (rank 0) before ab (rank 1), so a bc, although ab is leftmost.
    const Table table{{{a, b}, {1, 10}}, {{b, c}, {0, 11}}};
    EXPECT_EQ(merged({a, b, c}, table), (Symbols{a, 11}));
    // Negative and fractional ranks (SentencePiece: minus the score) order the same way.
    const Table scores{{{a, b}, {-0.5, 10}}, {{b, c}, {-2.25, 11}}};
    EXPECT_EQ(merged({a, b, c}, scores), (Symbols{a, 11}));
}

TEST(BpeMerge, EqualRanksMergeLeftmostFirst) {
    // a a a: the left pair merges, the right one is then stale.
    const Table aa{{{a, a}, {0, 10}}};
    EXPECT_EQ(merged({a, a, a}, aa), (Symbols{10, a}));
    EXPECT_EQ(merged({a, a, a, a}, aa), (Symbols{10, 10}));
    // Two different pairs of equal rank that overlap: b c d with bc and cd both rank 3.
    const Table tie{{{b, c}, {3, 20}}, {{c, d}, {3, 21}}};
    EXPECT_EQ(merged({b, c, d}, tie), (Symbols{20, d}));
}

TEST(BpeMerge, MergedSymbolsMergeAgainAndStaleCandidatesAreSkipped) {
    // h e l l o as in the tokenizer tests: he, ll, llo.
    const std::int64_t h = 4, e = 5, l = 6, o = 7, he = 8, ll = 9, llo = 10, hello = 11;
    const Table table{{{h, e}, {1, he}},
                      {{l, l}, {3, ll}},
                      {{ll, o}, {4, llo}},
                      {{he, llo}, {6, hello}},
                      {{e, l}, {5, 99}}};
    EXPECT_EQ(merged({h, e, l, l, o}, table), Symbols{hello});
    // e l (rank 5) was a candidate until he (rank 1) took the e.
    EXPECT_EQ(merged({h, e, l}, table), (Symbols{he, l}));
}

TEST(BpeMerge, EqualsTheReferenceLoopOnTrainerStyleTables) {
    // A table as a trainer writes it: each merge joins two symbols that exist before it. Words
    // drawn from the same symbols; the result must equal the reference loop's on every word.
    std::mt19937 rng(20240601);
    for (int round = 0; round < 20; ++round) {
        const std::int64_t base = 6;
        std::vector<std::int64_t> known;
        for (std::int64_t s = 0; s < base; ++s)
            known.push_back(s);
        Table table;
        std::int64_t next_symbol = base;
        for (int rank = 0; rank < 60; ++rank) {
            const std::int64_t x = known[rng() % known.size()], y = known[rng() % known.size()];
            if (table.count({x, y})) continue;
            table[{x, y}] = BpeMerge{static_cast<double>(rank), next_symbol};
            known.push_back(next_symbol++);
        }
        for (int w = 0; w < 300; ++w) {
            Symbols word(1 + rng() % 40);
            for (auto& s : word)
                s = static_cast<std::int64_t>(rng() % base);
            ASSERT_EQ(merged(word, table), reference_merged(word, table))
                << "round " << round << " word " << w;
        }
    }
}

TEST(BpeMerge, AHandMadeTableWithAnEarlierMergeOfALaterSymbolDiffersFromTheReference) {
    // ab is made by rank 5 but used by rank 1: the reference merges every a b first
    // (x ab ab, where "ab a" no longer occurs); this loop takes ab a as soon as it exists.
    const std::int64_t x = 4, ab = 10, aba = 11;
    const Table table{{{a, b}, {5, ab}}, {{ab, a}, {1, aba}}};
    EXPECT_EQ(reference_merged({x, a, b, a, b}, table), (Symbols{x, ab, ab}));
    EXPECT_EQ(merged({x, a, b, a, b}, table), (Symbols{x, aba, b}));
}

TEST(BpeMerge, LongWordsMergeInNLogN) {
    // 2^17 copies of one symbol, merged pairwise level by level into one symbol: the
    // reference loop rescans the word after every merge level (and CLIP's old loop after
    // every pair); this one pops each candidate once.
    Table table;
    for (std::int64_t level = 0; level < 17; ++level)
        table[{level, level}] = BpeMerge{static_cast<double>(level), level + 1};
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(merged(Symbols(std::size_t{1} << 17, 0), table), Symbols{17});
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(seconds, 5.0);  // about 0.02 s in a Release build
}

}  // namespace
}  // namespace crucible::data::text
