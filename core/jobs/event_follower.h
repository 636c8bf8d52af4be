#pragma once
// Follows a growing events.jsonl: each poll returns the complete new lines appended since the
// last call (a half-written last line waits for its newline), reading at most one slice of the
// file per call. Used by the SSE streams and the JSON answer of a job's events, so a reader
// never re-parses the whole file, and a reader far behind (a 50 MB log read from its start)
// holds a slice in memory, not the rest of the file.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/base/event.h"

namespace crucible::jobs {

class EventFollower {
  public:
    // Bytes of the file read per poll at most (the follower's memory stays about that size,
    // and an SSE or JSON answer holds about twice it while a slice goes out). ~1,000 events.
    static constexpr std::size_t kSliceBytes = 256u << 10;
    // A line longer than this (no event is) is dropped unread rather than held.
    static constexpr std::size_t kMaxLineBytes = 4u << 20;

    // Events with seq <= after_seq are skipped.
    EventFollower(std::filesystem::path file, std::int64_t after_seq,
                  std::size_t slice_bytes = kSliceBytes);
    std::vector<Event> poll();
    // The same events as Server-Sent Events text (format_sse), the line of the file sent as it
    // is written (parsed once to check it and read seq and kind, never re-serialized). `count`
    // receives the number of events.
    std::string poll_sse(std::size_t& count);
    // The same events as the items of a JSON array, each line as written, separated by commas
    // (with a comma before the first when `after_item` is true: earlier polls gave items).
    std::string poll_json_items(std::size_t& count, bool after_item);
    // True when the last poll read up to the end of the file as it was then: polling again
    // right away would find nothing more (except what was appended meanwhile).
    bool caught_up() const { return caught_up_; }
    std::int64_t last_seq() const { return last_seq_; }

  private:
    // Calls `take(event, line)` for each new complete line with seq > last seq.
    template <typename Take>
    void read_new(Take&& take);

    std::filesystem::path file_;
    std::size_t slice_bytes_;
    std::uint64_t offset_ = 0;
    std::string pending_;
    bool skipping_line_ = false;  // inside a line over kMaxLineBytes, dropped up to its newline
    bool caught_up_ = false;
    std::int64_t last_seq_;
};

// "id: <seq>\nevent: <kind>\ndata: <json>\n\n"
std::string format_sse(const Event& event);

}  // namespace crucible::jobs
