#include "core/data/caption_text.h"

#include <algorithm>

namespace crucible::data {
namespace {

std::string_view trim(std::string_view s) {
    const auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
    while (!s.empty() && is_space(s.front()))
        s.remove_prefix(1);
    while (!s.empty() && is_space(s.back()))
        s.remove_suffix(1);
    return s;
}

}  // namespace

std::vector<std::string> split_tags(std::string_view caption) {
    std::vector<std::string> tags;
    std::size_t start = 0;
    while (start <= caption.size()) {
        auto end = caption.find(',', start);
        if (end == std::string_view::npos) end = caption.size();
        const auto tag = trim(caption.substr(start, end - start));
        if (!tag.empty()) tags.emplace_back(tag);
        start = end + 1;
    }
    return tags;
}

std::string join_tags(const std::vector<std::string>& tags) {
    std::string out;
    for (std::size_t i = 0; i < tags.size(); ++i)
        out += (i ? ", " : "") + tags[i];
    return out;
}

std::string process_caption(std::string_view caption, const CaptionOptions& o, Rng& rng) {
    // Draw in a fixed order so the stream of random numbers does not depend on the outcome.
    const bool drop = rng.chance(o.caption_dropout);
    std::vector<std::string> tags = split_tags(caption);
    if (!o.prefix.empty()) tags.insert(tags.begin(), o.prefix);
    const std::size_t keep =
        std::min<std::size_t>(tags.size(), static_cast<std::size_t>(std::max(0, o.keep_tokens)) +
                                               (o.prefix.empty() ? 0 : 1));
    std::vector<std::string> kept(tags.begin(), tags.begin() + static_cast<std::ptrdiff_t>(keep));
    std::vector<std::string> rest(tags.begin() + static_cast<std::ptrdiff_t>(keep), tags.end());
    if (o.tag_dropout > 0) {
        std::vector<std::string> survivors;
        for (auto& t : rest)
            if (!rng.chance(o.tag_dropout)) survivors.push_back(std::move(t));
        rest = std::move(survivors);
    }
    // data::shuffle, not std::shuffle: the same order with every standard library.
    if (o.shuffle_tags) shuffle(rest, rng);
    if (drop) return "";
    kept.insert(kept.end(), rest.begin(), rest.end());
    return join_tags(kept);
}

std::map<std::string, int> tag_frequency(const std::vector<std::string>& captions) {
    std::map<std::string, int> out;
    for (const auto& c : captions)
        for (const auto& t : split_tags(c))
            ++out[t];
    return out;
}

}  // namespace crucible::data
