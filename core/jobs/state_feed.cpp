#include "core/jobs/state_feed.h"

#include <chrono>

namespace crucible::jobs {

void StateFeed::publish(const std::string& kind, Json data) {
    {
        std::lock_guard lock(mutex_);
        std::int64_t id = next_id_++;
        items_.emplace_back(id, "id: " + std::to_string(id) + "\nevent: " + kind +
                                    "\ndata: " + data.dump() + "\n\n");
        while (items_.size() > capacity_)
            items_.pop_front();
    }
    cv_.notify_all();
}

std::vector<std::pair<std::int64_t, std::string>> StateFeed::wait_after(std::int64_t after,
                                                                        int timeout_ms) {
    std::unique_lock lock(mutex_);
    cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return next_id_ - 1 > after; });
    std::vector<std::pair<std::int64_t, std::string>> out;
    for (const auto& item : items_)
        if (item.first > after) out.push_back(item);
    return out;
}

std::int64_t StateFeed::last_id() const {
    std::lock_guard lock(mutex_);
    return next_id_ - 1;
}

}  // namespace crucible::jobs
