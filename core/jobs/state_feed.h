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

struct FeedItem {
    std::int64_t id = 0;
    std::string owner;  // who submitted the job it is about ("" = about the server: GPUs)
    std::string text;   // the SSE text
};

class StateFeed {
  public:
    explicit StateFeed(std::size_t capacity = 4096) : capacity_(capacity) {}
    // `owner`: the submitter of the job the item is about; only callers who may see that job
    // get it.
    void publish(const std::string& kind, Json data, const std::string& owner = {});
    // Items with id > after, waiting up to `timeout_ms` (0: not at all) for one to arrive.
    std::vector<FeedItem> wait_after(std::int64_t after, int timeout_ms);
    std::int64_t last_id() const;

  private:
    std::size_t capacity_;
    mutable std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<FeedItem> items_;
    std::int64_t next_id_ = 1;
};

}  // namespace crucible::jobs
