#pragma once
// Follows a growing events.jsonl: each poll() returns the complete new lines appended since the
// last call (a half-written last line waits for its newline). Used by the SSE streams, so a
// reader never re-parses the whole file.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/base/event.h"

namespace crucible::jobs {

class EventFollower {
  public:
    // Events with seq <= after_seq are skipped.
    EventFollower(std::filesystem::path file, std::int64_t after_seq);
    std::vector<Event> poll();
    // The same events as Server-Sent Events text (format_sse), the line of the file sent as it
    // is written (parsed once to check it and read seq and kind, never re-serialized). `count`
    // receives the number of events.
    std::string poll_sse(std::size_t& count);
    std::int64_t last_seq() const { return last_seq_; }

  private:
    // Calls `take(event, line)` for each new complete line with seq > last seq.
    template <typename Take>
    void read_new(Take&& take);

    std::filesystem::path file_;
    std::uint64_t offset_ = 0;
    std::string pending_;
    std::int64_t last_seq_;
};

// "id: <seq>\nevent: <kind>\ndata: <json>\n\n"
std::string format_sse(const Event& event);

}  // namespace crucible::jobs
