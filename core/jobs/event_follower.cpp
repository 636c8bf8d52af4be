#include "core/jobs/event_follower.h"

#include <fstream>
#include <string_view>

namespace crucible::jobs {

EventFollower::EventFollower(std::filesystem::path file, std::int64_t after_seq)
    : file_(std::move(file)), last_seq_(after_seq) {}

template <typename Take>
void EventFollower::read_new(Take&& take) {
    std::error_code ec;
    auto size = std::filesystem::file_size(file_, ec);
    if (ec || size <= offset_) return;
    std::ifstream in(file_, std::ios::binary);
    in.seekg(static_cast<std::streamoff>(offset_));
    std::string chunk(size - offset_, '\0');
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    chunk.resize(static_cast<std::size_t>(in.gcount()));
    offset_ += chunk.size();
    pending_ += chunk;
    std::size_t start = 0;
    for (std::size_t nl; (nl = pending_.find('\n', start)) != std::string::npos; start = nl + 1) {
        std::string_view line(pending_.data() + start, nl - start);
        if (line.empty()) continue;
        try {
            Event e = event_from_json(Json::parse(line), file_.filename().string());
            if (e.seq > last_seq_) {
                last_seq_ = e.seq;
                take(std::move(e), line);
            }
        } catch (const std::exception&) {
            // A damaged line is skipped; seq numbers of the good ones stay gap-free for clients.
        }
    }
    pending_.erase(0, start);
}

std::vector<Event> EventFollower::poll() {
    std::vector<Event> out;
    read_new([&](Event e, std::string_view) { out.push_back(std::move(e)); });
    return out;
}

std::string EventFollower::poll_sse(std::size_t& count) {
    std::string text;
    count = 0;
    read_new([&](const Event& e, std::string_view line) {
        text += "id: ";
        text += std::to_string(e.seq);
        text += "\nevent: ";
        text += e.kind;
        text += "\ndata: ";
        text += line;
        text += "\n\n";
        ++count;
    });
    return text;
}

std::string format_sse(const Event& event) {
    return "id: " + std::to_string(event.seq) + "\nevent: " + event.kind +
           "\ndata: " + event_to_line(event) + "\n\n";
}

}  // namespace crucible::jobs
