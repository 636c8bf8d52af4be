#pragma once
// The server-wide live feed (/v1/stream): job state changes and GPU telemetry, numbered so a
// reconnecting client continues with Last-Event-ID. A bounded ring keeps the recent items.
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "core/base/json.h"

namespace crucible::jobs {

class StateFeed {
  public:
    explicit StateFeed(std::size_t capacity = 4096) : capacity_(capacity) {}
    void publish(const std::string& kind, Json data);
    // Items with id > after, waiting up to `timeout_ms` for one to arrive.
    std::vector<std::pair<std::int64_t, std::string>> wait_after(std::int64_t after,
                                                                 int timeout_ms);
    std::int64_t last_id() const;

  private:
    std::size_t capacity_;
    mutable std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<std::pair<std::int64_t, std::string>> items_;  // id -> SSE text
    std::int64_t next_id_ = 1;
};

}  // namespace crucible::jobs
