#include "core/jobs/audit_log.h"

#include "core/base/event.h"
#include "core/base/file_io.h"
#include "core/base/json.h"
#include "core/jobs/path_policy.h"

namespace crucible::jobs {

AuditLog::AuditLog(std::filesystem::path file, AuditLogOptions options)
    : file_(std::move(file)), options_(options) {
    std::error_code ec;
    size_ = std::filesystem::file_size(file_, ec);
    if (ec) size_ = 0;
}

void AuditLog::rotate() {
    out_.close();
    std::error_code ec;
    const auto numbered = [&](int n) {
        // Appended piece by piece: GCC 12 at -O3 reports a false -Wrestrict for "." + string.
        std::string suffix(1, '.');
        suffix.append(std::to_string(n));
        auto name = file_;
        name += suffix;
        return name;
    };
    std::filesystem::remove(numbered(options_.keep), ec);
    for (int n = options_.keep - 1; n >= 1; --n)
        std::filesystem::rename(numbered(n), numbered(n + 1), ec);
    std::filesystem::rename(file_, numbered(1), ec);
    size_ = 0;
}

void AuditLog::write(const std::string& who, const std::string& action, const std::string& detail,
                     int status, bool durable) {
    Json line = {{"t", unix_time_now()},
                 {"who", printable(who)},
                 {"action", printable(action)},
                 {"detail", printable(detail)}};
    if (status) line["status"] = status;
    const std::string text = line.dump() + "\n";
    std::lock_guard lock(mutex_);
    if (size_ + text.size() > options_.max_bytes && size_ > 0) rotate();
    if (!out_.is_open()) out_.open(file_, std::ios::app | std::ios::binary);
    out_ << text;
    out_.flush();
    size_ += text.size();
    const auto now = std::chrono::steady_clock::now();
    if (durable || now - last_sync_ > std::chrono::seconds(1)) {
        platform::fsync_file(file_);
        last_sync_ = now;
    }
}

}  // namespace crucible::jobs
