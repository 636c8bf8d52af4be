#pragma once
// The agent's audit trail (<data>/audit.log): one JSON line per request a token made (who, what,
// the answer's status) and per refused login. Lines are fsynced (changes at once, reads at least
// every second), the file is rotated at a size limit (audit.log.1 ... .N), and what a client
// sent is cut to a bounded, valid UTF-8 length so no client can bloat or break it.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>

namespace crucible::jobs {

struct AuditLogOptions {
    std::uint64_t max_bytes = 16u << 20;  // rotate when the file grows past this
    int keep = 5;                         // rotated files kept
};

class AuditLog {
  public:
    explicit AuditLog(std::filesystem::path file, AuditLogOptions options = {});

    // `status` 0 = not an HTTP answer (a scheduler action). `durable`: fsync now (anything
    // that changes state); otherwise at most a second later.
    void write(const std::string& who, const std::string& action, const std::string& detail,
               int status = 0, bool durable = true);

  private:
    void rotate();

    std::filesystem::path file_;
    AuditLogOptions options_;
    std::mutex mutex_;
    std::ofstream out_;
    std::uint64_t size_ = 0;
    std::chrono::steady_clock::time_point last_sync_{};
};

}  // namespace crucible::jobs
