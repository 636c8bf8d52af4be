#pragma once
// At most `per_window` messages in each fixed window of time; the rest are counted, and the
// count is handed to the first message of the next window so that it can say what was held back.
// The service's event log sink uses it (log.cpp): a flood of warnings must not crowd out the rest
// of the Application log. Not thread-safe: its user holds a lock.
#include <chrono>

namespace crucible {

class BurstLimit {
  public:
    using Clock = std::chrono::steady_clock;
    BurstLimit(int per_window, Clock::duration window) : per_window_(per_window), window_(window) {}

    struct Verdict {
        bool pass = false;  // send this message
        // Messages held back in the windows since the last one that passed: say so first.
        int held_back_before = 0;
    };
    Verdict admit(Clock::time_point now);

  private:
    int per_window_;
    Clock::duration window_;
    bool started_ = false;
    Clock::time_point window_start_{};
    int in_window_ = 0;
    int held_back_ = 0;
};

}  // namespace crucible
