#include "core/base/log.h"

#include "core/base/burst_limit.h"
#include "core/base/event_log.h"
#include "core/base/file_io.h"

#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/rotating_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <charconv>
#include <chrono>
#include <mutex>
#include <vector>

namespace crucible {
namespace {

// Warnings and errors to the system's log (LogOptions::event_log_source), at most kPerMinute in a
// minute; what is held back is counted, and said in the first event of the next minute.
class EventLogSink : public spdlog::sinks::base_sink<std::mutex> {
  public:
    explicit EventLogSink(std::string source) : source_(std::move(source)) {
        set_level(spdlog::level::warn);
    }

  protected:
    void sink_it_(const spdlog::details::log_msg& msg) override {
        const auto verdict = limit_.admit(BurstLimit::Clock::now());
        if (verdict.held_back_before > 0)
            report_event(source_, EventLogType::Warning,
                         std::to_string(verdict.held_back_before) +
                             " further warnings and errors were only written to the agent's "
                             "log file");
        if (!verdict.pass) return;
        const auto type =
            msg.level >= spdlog::level::err ? EventLogType::Error : EventLogType::Warning;
        report_event(source_, type, std::string(msg.payload.data(), msg.payload.size()));
    }
    void flush_() override {}

  private:
    static constexpr int kPerMinute = 30;
    std::string source_;
    BurstLimit limit_{kPerMinute, std::chrono::minutes(1)};
};

}  // namespace

void init_logging(const LogOptions& options) {
    std::vector<spdlog::sink_ptr> sinks;
    if (options.console) sinks.push_back(std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
    if (!options.file.empty()) {
        std::filesystem::create_directories(options.file.parent_path());
        sinks.push_back(std::make_shared<spdlog::sinks::rotating_file_sink_mt>(
            path_to_utf8(options.file), options.max_file_bytes, options.max_files));
    }
    if (!options.event_log_source.empty())
        sinks.push_back(std::make_shared<EventLogSink>(options.event_log_source));
    auto logger = std::make_shared<spdlog::logger>("crucible", sinks.begin(), sinks.end());
    logger->set_level(spdlog::level::from_str(options.level));
    logger->set_pattern("%Y-%m-%d %H:%M:%S.%e %^%l%$ %v");
    spdlog::set_default_logger(logger);
}

void log_info(std::string_view message) {
    spdlog::info("{}", message);
}
void log_warn(std::string_view message) {
    spdlog::warn("{}", message);
}
void log_error(std::string_view message) {
    spdlog::error("{}", message);
}

const char* log_level_name(LogLevel level) {
    switch (level) {
        case LogLevel::Debug:
            return "debug";
        case LogLevel::Info:
            return "info";
        case LogLevel::Warning:
            return "warning";
        case LogLevel::Error:
            return "error";
    }
    return "info";
}

std::optional<LogLevel> parse_log_level(std::string_view text) {
    for (const LogLevel l : {LogLevel::Debug, LogLevel::Info, LogLevel::Warning, LogLevel::Error})
        if (text == log_level_name(l)) return l;
    if (text == "warn") return LogLevel::Warning;
    if (text == "trace") return LogLevel::Debug;
    return std::nullopt;
}

void log_at(LogLevel level, std::string_view message) {
    switch (level) {
        case LogLevel::Error:
            log_error(message);
            break;
        case LogLevel::Warning:
            log_warn(message);
            break;
        case LogLevel::Debug:
        case LogLevel::Info:
            log_info(message);
            break;
    }
}

std::string log_number(double value) {
    char text[32];  // to_chars, not printf's %g: the same text whatever the locale
    const auto end = std::to_chars(text, text + sizeof text, value, std::chars_format::general, 6);
    return std::string(text, end.ptr);
}

}  // namespace crucible
