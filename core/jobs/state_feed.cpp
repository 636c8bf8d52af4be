#include "core/jobs/state_feed.h"

#include <algorithm>
#include <chrono>

namespace crucible::jobs {

void StateFeed::publish(const std::string& kind, Json data, const std::string& owner) {
    {
        std::lock_guard lock(mutex_);
        std::int64_t id = next_id_++;
        items_.push_back({id, owner,
                          "id: " + std::to_string(id) + "\nevent: " + kind + "\ndata: " +
                              data.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n\n"});
        while (items_.size() > capacity_)
            items_.pop_front();
    }
    cv_.notify_all();
}

std::vector<FeedItem> StateFeed::wait_after(std::int64_t after, int timeout_ms) {
    std::unique_lock lock(mutex_);
    if (timeout_ms > 0)
        cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                     [&] { return next_id_ - 1 > after; });
    std::vector<FeedItem> out;
    if (items_.empty()) return out;
    // Ids are consecutive: start at the first one after `after` instead of scanning the ring
    // (every open stream asks twenty times a second).
    const std::int64_t first = items_.front().id;
    const auto skip = static_cast<std::size_t>(std::max<std::int64_t>(0, after + 1 - first));
    for (std::size_t i = skip; i < items_.size(); ++i)
        out.push_back(items_[i]);
    return out;
}

std::int64_t StateFeed::last_id() const {
    std::lock_guard lock(mutex_);
    return next_id_ - 1;
}

}  // namespace crucible::jobs
