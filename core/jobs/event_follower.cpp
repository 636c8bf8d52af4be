#include "core/jobs/event_follower.h"

#include <fstream>

namespace crucible::jobs {

EventFollower::EventFollower(std::filesystem::path file, std::int64_t after_seq)
    : file_(std::move(file)), last_seq_(after_seq) {}

std::vector<Event> EventFollower::poll() {
    std::vector<Event> out;
    std::error_code ec;
    auto size = std::filesystem::file_size(file_, ec);
    if (ec || size <= offset_) return out;
    std::ifstream in(file_, std::ios::binary);
    in.seekg(static_cast<std::streamoff>(offset_));
    std::string chunk(size - offset_, '\0');
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    chunk.resize(static_cast<std::size_t>(in.gcount()));
    offset_ += chunk.size();
    pending_ += chunk;
    std::size_t start = 0;
    for (std::size_t nl; (nl = pending_.find('\n', start)) != std::string::npos; start = nl + 1) {
        std::string line = pending_.substr(start, nl - start);
        if (line.empty()) continue;
        try {
            Event e = event_from_json(Json::parse(line), file_.filename().string());
            if (e.seq > last_seq_) {
                last_seq_ = e.seq;
                out.push_back(std::move(e));
            }
        } catch (const std::exception&) {
            // A damaged line is skipped; seq numbers of the good ones stay gap-free for clients.
        }
    }
    pending_.erase(0, start);
    return out;
}

std::string format_sse(const Event& event) {
    return "id: " + std::to_string(event.seq) + "\nevent: " + event.kind +
           "\ndata: " + event_to_line(event) + "\n\n";
}

}  // namespace crucible::jobs
