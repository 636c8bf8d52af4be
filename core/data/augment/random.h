#pragma once
// A small seeded random generator whose results are identical on every platform and standard
// library. std::uniform_int_distribution and friends are implemented differently by libstdc++,
// libc++ and MSVC, so Crucible never uses them where results must be reproducible (synthetic
// data, augmentation, sample order): these helpers map raw 64-bit draws to ranges themselves.
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <utility>
#include <vector>

namespace crucible::data {

// SplitMix64 step: a good 64-bit mixer, used to seed and to derive independent streams.
inline std::uint64_t splitmix64(std::uint64_t& state) {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// A seed for an independent stream named by `parts` (e.g. seed, epoch, sample index). Order
// matters; any change of any part gives an unrelated stream.
inline std::uint64_t derive_seed(std::initializer_list<std::uint64_t> parts) {
    std::uint64_t state = 0x6A09E667F3BCC909ull;
    std::uint64_t out = splitmix64(state);
    for (std::uint64_t p : parts) {
        state ^= p + 0x9E3779B97F4A7C15ull + (out << 6) + (out >> 2);
        out = splitmix64(state);
    }
    return out;
}

// xoshiro256** seeded through SplitMix64.
class Rng {
  public:
    explicit Rng(std::uint64_t seed = 0) {
        std::uint64_t sm = seed;
        for (auto& w : s_)
            w = splitmix64(sm);
    }

    std::uint64_t next_u64() {
        const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
        const std::uint64_t t = s_[1] << 17;
        s_[2] ^= s_[0];
        s_[3] ^= s_[1];
        s_[1] ^= s_[2];
        s_[0] ^= s_[3];
        s_[2] ^= t;
        s_[3] = rotl(s_[3], 45);
        return result;
    }

    // Uniform double in [0, 1) with 53 random bits.
    double uniform01() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
    // Uniform double in [lo, hi).
    double uniform(double lo, double hi) { return lo + (hi - lo) * uniform01(); }
    // Uniform integer in [lo, hi] (inclusive), unbiased (rejection on the 64-bit range).
    std::int64_t uniform_int(std::int64_t lo, std::int64_t hi) {
        if (hi <= lo) return lo;
        const std::uint64_t range = static_cast<std::uint64_t>(hi - lo) + 1;
        if (range == 0) return static_cast<std::int64_t>(next_u64());  // full 64-bit range
        const std::uint64_t limit = UINT64_MAX - UINT64_MAX % range;
        std::uint64_t x;
        do {
            x = next_u64();
        } while (x >= limit);
        return lo + static_cast<std::int64_t>(x % range);
    }
    // True with probability p.
    bool chance(double p) { return p > 0 && uniform01() < p; }

  private:
    static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
    std::uint64_t s_[4];
};

// Fisher-Yates shuffle in place, the same on every platform (std::shuffle is not): the last
// item swaps with one drawn from all of them, then the one before it, down to the second.
template <class T>
void shuffle(std::vector<T>& items, Rng& rng) {
    for (std::size_t i = items.size(); i-- > 1;) {
        const auto j = static_cast<std::size_t>(rng.uniform_int(0, static_cast<std::int64_t>(i)));
        std::swap(items[i], items[j]);
    }
}

// A shuffled 0..n-1 (shuffle() of it): item k of a shuffled list is item order[k] of the list.
inline std::vector<std::int64_t> random_permutation(std::int64_t n, Rng& rng) {
    std::vector<std::int64_t> order(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < order.size(); ++i)
        order[i] = static_cast<std::int64_t>(i);
    shuffle(order, rng);
    return order;
}

}  // namespace crucible::data
