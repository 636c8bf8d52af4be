#pragma once
// Caption text handling for image + .txt caption datasets (kohya style): comma-separated tags,
// caption dropout (the whole caption becomes "" with a probability, so the model also learns the
// unconditional case for classifier-free guidance), tag shuffling that keeps the first
// `keep_tokens` tags in place, and per-tag dropout. Randomness comes from the caller's engine, so
// results depend only on its seed.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/data/augment/random.h"

namespace crucible::data {

struct CaptionOptions {
    double caption_dropout = 0;  // probability of an empty caption
    bool shuffle_tags = false;
    int keep_tokens = 0;     // leading tags that never move or drop
    double tag_dropout = 0;  // probability of dropping each movable tag
    std::string prefix;      // prepended as a kept tag (e.g. a trigger word), when not empty
};

// Tags of a caption: split at commas, trimmed, empty pieces dropped.
std::vector<std::string> split_tags(std::string_view caption);
// Joins with ", ".
std::string join_tags(const std::vector<std::string>& tags);

// Applies dropout / shuffle / keep_tokens to one caption.
std::string process_caption(std::string_view caption, const CaptionOptions& options, Rng& rng);

// Counts of each tag over captions (kohya's ss_tag_frequency for one folder).
std::map<std::string, int> tag_frequency(const std::vector<std::string>& captions);

}  // namespace crucible::data
