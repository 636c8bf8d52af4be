#include "core/jobs/gpu_topology.h"

#include <algorithm>
#include <tuple>

namespace crucible::jobs {

namespace {

// Lower is better: (highest pair cost, total cost, the indices themselves).
using Score = std::tuple<int, long long, std::vector<int>>;

Score score_of(const std::vector<int>& set, const GpuTopology& topology) {
    int worst = 0;
    long long total = 0;
    for (std::size_t i = 0; i < set.size(); ++i)
        for (std::size_t j = i + 1; j < set.size(); ++j) {
            const int c = topology.between(set[i], set[j]);
            worst = std::max(worst, c);
            total += c;
        }
    return {worst, total, set};
}

long long combinations(int n, int k) {
    long long c = 1;
    for (int i = 1; i <= k; ++i) {
        c = c * (n - k + i) / i;
        if (c > 1'000'000) return c;
    }
    return c;
}

}  // namespace

int GpuTopology::between(int a, int b) const {
    if (a == b) return 0;
    const auto it = cost.find({std::min(a, b), std::max(a, b)});
    return it == cost.end() ? kUnknownCost : it->second;
}

std::vector<int> closest_gpus(const std::vector<int>& free_gpus, int count,
                              const GpuTopology& topology) {
    std::vector<int> free = free_gpus;
    std::sort(free.begin(), free.end());
    const int n = static_cast<int>(free.size());
    if (count <= 0 || count > n) return {};
    if (topology.empty() || count == 1 || count == n)
        return std::vector<int>(free.begin(), free.begin() + count);
    std::vector<int> best;
    Score best_score;
    const auto consider = [&](std::vector<int> set) {
        std::sort(set.begin(), set.end());
        Score s = score_of(set, topology);
        if (best.empty() || s < best_score) {
            best = set;
            best_score = std::move(s);
        }
    };
    if (combinations(n, count) <= 20'000) {
        // Every subset of `count`, through a selection mask in lexicographic order.
        std::vector<bool> pick(static_cast<std::size_t>(n), false);
        std::fill(pick.begin(), pick.begin() + count, true);
        do {
            std::vector<int> set;
            for (int i = 0; i < n; ++i)
                if (pick[static_cast<std::size_t>(i)])
                    set.push_back(free[static_cast<std::size_t>(i)]);
            consider(std::move(set));
        } while (std::prev_permutation(pick.begin(), pick.end()));
        return best;
    }
    // Many GPUs: from each one, add the GPU closest to the set so far.
    for (int seed : free) {
        std::vector<int> set{seed};
        while (static_cast<int>(set.size()) < count) {
            int next = -1;
            long long next_cost = 0;
            for (int g : free) {
                if (std::find(set.begin(), set.end(), g) != set.end()) continue;
                int worst = 0;
                long long total = 0;
                for (int s : set) {
                    worst = std::max(worst, topology.between(g, s));
                    total += topology.between(g, s);
                }
                const long long c = worst * 1'000'000LL + total;
                if (next < 0 || c < next_cost) {
                    next = g;
                    next_cost = c;
                }
            }
            set.push_back(next);
        }
        consider(std::move(set));
    }
    return best;
}

}  // namespace crucible::jobs
