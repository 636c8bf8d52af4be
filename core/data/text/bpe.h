#pragma once
// The byte-pair merge loop of every BPE tokenizer in Crucible (tokenizer.json BPE models,
// SentencePiece BPE models, CLIP). A word starts as a row of symbols; the adjacent pair with the
// lowest rank merges into one symbol, the leftmost pair among equal ranks first, until no
// adjacent pair has a merge. It runs in O(n log n): a heap of candidate pairs over a linked
// list, where a candidate whose symbols changed since it was pushed is skipped when it comes
// up (what Hugging Face's tokenizers do), instead of rescanning the word after every merge.
//
// The caller says what a symbol is and what merges: symbols are integers of its choosing (vocab
// ids, or spans of the text packed into one integer), and `find(left, right)` returns the merge
// of two adjacent symbols, or nothing. Ranks: a merge's line number for tokenizer.json and CLIP,
// minus the piece's score for SentencePiece (the best score merges first).
//
// For merge tables where every merge only uses symbols that exist before it (every table a
// trainer writes), this gives what GPT-2's and CLIP's reference loop gives (find the lowest-rank
// pair, merge all its occurrences left to right, repeat). A hand-made table whose merge
// yields a symbol that a lower-ranked merge uses can differ: this loop takes that merge at once.
// Shared by plugins/llm_lora and plugins/sd_lora, so it lives in core/data (see unicode.h).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <queue>
#include <vector>

namespace crucible::data::text {

struct BpeMerge {
    double rank = 0;          // lower merges first
    std::int64_t merged = 0;  // the symbol that replaces the pair
};

// Merges `symbols` in place. FindMerge: (std::int64_t left, std::int64_t right) ->
// std::optional<BpeMerge>.
template <class FindMerge>
void bpe_merge(std::vector<std::int64_t>& symbols, FindMerge&& find) {
    const std::size_t n = symbols.size();
    if (n < 2) return;
    constexpr std::size_t kNone = static_cast<std::size_t>(-1);
    std::vector<std::size_t> prev(n), next(n);
    std::vector<bool> alive(n, true);
    for (std::size_t i = 0; i < n; ++i) {
        prev[i] = i == 0 ? kNone : i - 1;
        next[i] = i + 1 < n ? i + 1 : kNone;
    }
    struct Candidate {
        double rank;
        std::size_t pos;           // the left symbol's slot
        std::int64_t left, right;  // the symbols when it was pushed
        std::int64_t merged;
        bool operator>(const Candidate& o) const {
            return rank != o.rank ? rank > o.rank : pos > o.pos;
        }
    };
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap;
    auto push = [&](std::size_t i) {
        if (i == kNone || next[i] == kNone) return;
        const std::int64_t left = symbols[i], right = symbols[next[i]];
        if (const std::optional<BpeMerge> m = find(left, right))
            heap.push({m->rank, i, left, right, m->merged});
    };
    for (std::size_t i = 0; i + 1 < n; ++i)
        push(i);
    while (!heap.empty()) {
        const Candidate c = heap.top();
        heap.pop();
        const std::size_t i = c.pos;
        if (!alive[i] || next[i] == kNone || symbols[i] != c.left || symbols[next[i]] != c.right)
            continue;  // stale: one side merged since
        const std::size_t j = next[i];
        symbols[i] = c.merged;
        alive[j] = false;
        next[i] = next[j];
        if (next[j] != kNone) prev[next[j]] = i;
        push(prev[i]);
        push(i);
    }
    std::size_t out = 0;
    for (std::size_t i = 0; i != kNone; i = next[i])
        symbols[out++] = symbols[i];
    symbols.resize(out);
}

}  // namespace crucible::data::text
