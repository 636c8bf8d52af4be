#include "core/jobs/event_follower.h"

#include "core/base/file_io.h"

#include <algorithm>
#include <fstream>
#include <string_view>

namespace crucible::jobs {

EventFollower::EventFollower(std::filesystem::path file, std::int64_t after_seq,
                             std::size_t slice_bytes)
    : file_(std::move(file)),
      slice_bytes_(std::max<std::size_t>(slice_bytes, 1)),
      last_seq_(after_seq) {}

template <typename Take>
void EventFollower::read_new(Take&& take) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(file_, ec);
    caught_up_ = ec || size <= offset_;
    if (caught_up_) return;
    std::ifstream in(file_, std::ios::binary);
    in.seekg(static_cast<std::streamoff>(offset_));
    // Read straight behind what waits for its newline: no second copy of the slice.
    const std::size_t held = pending_.size();
    pending_.resize(
        held + static_cast<std::size_t>(std::min<std::uint64_t>(size - offset_, slice_bytes_)));
    in.read(pending_.data() + held, static_cast<std::streamsize>(pending_.size() - held));
    const auto got = static_cast<std::size_t>(in.gcount());
    pending_.resize(held + got);
    offset_ += got;
    caught_up_ = offset_ >= size || got == 0;
    if (skipping_line_) {  // the tail of an over-long line: dropped up to its newline
        const std::size_t nl = pending_.find('\n');
        if (nl == std::string::npos) {
            pending_.clear();
            return;
        }
        pending_.erase(0, nl + 1);
        skipping_line_ = false;
    }
    std::size_t start = 0;
    for (std::size_t nl; (nl = pending_.find('\n', start)) != std::string::npos; start = nl + 1) {
        std::string_view line(pending_.data() + start, nl - start);
        if (line.empty() || line.size() > kMaxLineBytes) continue;
        try {
            const std::string where = path_to_utf8(file_.filename());
            Event e = event_from_json(parse_json(line, where), where);
            if (e.seq > last_seq_) {
                last_seq_ = e.seq;
                take(std::move(e), line);
            }
        } catch (const std::exception&) {
            // A damaged line is skipped; seq numbers of the good ones stay gap-free for clients.
        }
    }
    pending_.erase(0, start);
    if (pending_.size() > kMaxLineBytes) {  // no newline in sight: not an event line
        pending_.clear();
        pending_.shrink_to_fit();
        skipping_line_ = true;
    }
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

std::string EventFollower::poll_json_items(std::size_t& count, bool after_item) {
    std::string text;
    count = 0;
    read_new([&](const Event&, std::string_view line) {
        if (after_item || count > 0) text += ',';
        text += line;
        ++count;
    });
    return text;
}

std::string format_sse(const Event& event) {
    return "id: " + std::to_string(event.seq) + "\nevent: " + event.kind +
           "\ndata: " + event_to_line(event) + "\n\n";
}

}  // namespace crucible::jobs
