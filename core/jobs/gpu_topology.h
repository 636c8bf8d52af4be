#pragma once
// How close the agent's GPUs are to each other, for placing a job on several of them ([B2 6/8]):
// gradients cross between every pair of ranks each step, so GPUs joined by NVLink, or under one
// PCIe switch, train faster together than GPUs across the CPU sockets. The cost of a pair is
// NVML's common ancestor of the two (0 the same board, 10 one PCIe switch, 20 several switches,
// 30 the host bridge, 40 one NUMA node, 50 across sockets), or kNvLinkCost when NVML reports an
// NVLink between them.
#include <map>
#include <utility>
#include <vector>

namespace crucible::jobs {

inline constexpr int kNvLinkCost = 5;
inline constexpr int kUnknownCost = 50;  // a pair NVML could not place: as far as across sockets

struct GpuTopology {
    std::map<std::pair<int, int>, int> cost;  // (lower index, higher index) -> cost
    // By NVML index, in either order; kUnknownCost for a pair not measured.
    int between(int a, int b) const;
    bool empty() const { return cost.empty(); }
};

// The `count` GPUs of `free` (NVML indices) that are closest together: the fewest far pairs
// first (the highest pair cost, which bounds an all-reduce), then the lowest total, then the
// lowest indices. Without a topology: the first `count` of `free`. Fewer than `count` free:
// empty. Searches every combination up to 20 000, else grows a set greedily from each GPU.
std::vector<int> closest_gpus(const std::vector<int>& free, int count, const GpuTopology& topology);

}  // namespace crucible::jobs
