#include "core/data/caption_dataset.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <system_error>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/data/caption_text.h"
#include "core/data/image_io.h"

namespace crucible::data {
namespace fs = std::filesystem;
namespace {

bool is_image_extension(const fs::path& p) {
    std::string ext = path_to_utf8(p.extension());
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return ext == ".png" || ext == ".jpg" || ext == ".jpeg" || ext == ".webp" || ext == ".bmp";
}

std::string trim(std::string s) {
    const auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
    while (!s.empty() && is_space(s.back()))
        s.pop_back();
    std::size_t i = 0;
    while (i < s.size() && is_space(s[i]))
        ++i;
    return s.substr(i);
}

// Caption text, or an error message (prefixed with '!').
std::string read_caption(const fs::path& p, const CaptionFolderOptions& o, bool& ok) {
    ok = false;
    std::error_code ec;
    if (!fs::is_regular_file(p, ec)) return "caption is not a regular file";
    const auto size = fs::file_size(p, ec);
    if (ec) return "caption cannot be read";
    if (size > o.max_caption_bytes)
        return "caption file is larger than " + std::to_string(o.max_caption_bytes) + " bytes";
    std::string text;
    try {
        text = read_file_bytes_limited(p, o.max_caption_bytes);
    } catch (const std::exception& e) {
        return std::string("caption cannot be read: ") + e.what();
    }
    if (text.size() >= 3 && static_cast<unsigned char>(text[0]) == 0xEF &&
        static_cast<unsigned char>(text[1]) == 0xBB && static_cast<unsigned char>(text[2]) == 0xBF)
        text.erase(0, 3);  // UTF-8 byte-order mark
    if (!is_valid_utf8(text)) return "caption is not UTF-8 text";
    if (text.find('\0') != std::string::npos) return "caption contains NUL bytes";
    // Multi-line captions: the first non-empty line (kohya reads one line).
    std::string first;
    std::size_t pos = 0;
    while (pos <= text.size()) {
        auto end = text.find('\n', pos);
        if (end == std::string::npos) end = text.size();
        first = trim(text.substr(pos, end - pos));
        if (!first.empty()) break;
        pos = end + 1;
    }
    ok = true;
    return first;
}

}  // namespace

int folder_repeats(const std::string& name) {
    const auto us = name.find('_');
    if (us == std::string::npos || us == 0 || us > 6) return 1;
    int v = 0;
    const auto [p, ec] = std::from_chars(name.data(), name.data() + us, v);
    if (ec != std::errc() || p != name.data() + us || v < 1) return 1;
    return std::min(v, 10000);
}

std::size_t CaptionDataset::epoch_size() const {
    std::size_t n = 0;
    for (const auto& i : items)
        n += static_cast<std::size_t>(i.repeats);
    return n;
}

CaptionDataset load_caption_folder(const fs::path& root, const CaptionFolderOptions& o) {
    const std::string where = path_to_utf8(root);
    std::error_code ec;
    if (!fs::exists(root, ec)) throw InputError(where, "no such folder");
    if (!fs::is_directory(root, ec)) throw InputError(where, "not a folder");
    CaptionDataset ds;
    ds.root = root;
    std::vector<fs::path> images;
    fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec);
    if (ec) throw InputError(where, "cannot list the folder: " + ec.message());
    for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (ec) {
            ds.problems.push_back({root, "cannot list part of the folder: " + ec.message()});
            break;
        }
        if (it.depth() >= o.max_depth) it.disable_recursion_pending();
        const fs::path p = it->path();
        std::error_code fec;
        if (!it->is_regular_file(fec) || !is_image_extension(p)) continue;
        // A symbolic link may point outside the dataset: not followed.
        if (it->is_symlink(fec) || !is_path_inside(root, p)) {
            ds.problems.push_back({p, "outside the dataset folder (link)"});
            continue;
        }
        images.push_back(p);
        if (images.size() > o.max_images)
            throw InputError(where, "more than " + std::to_string(o.max_images) + " images");
    }
    std::sort(images.begin(), images.end());
    ImageLimits limits;
    limits.max_pixels = o.max_image_pixels;
    std::map<std::string, std::vector<std::string>> captions_by_folder;
    for (const auto& p : images) {
        const std::string problem = image_file_problem(p, limits);
        if (!problem.empty()) {
            ds.problems.push_back({p, problem});
            continue;
        }
        const auto header = read_image_header(p);
        if (!header) {
            ds.problems.push_back({p, "not a readable image (unknown or truncated header)"});
            continue;
        }
        if (header->width <= 0 || header->height <= 0 ||
            static_cast<std::uint64_t>(header->width) * static_cast<std::uint64_t>(header->height) >
                o.max_image_pixels) {
            ds.problems.push_back({p, "image size " + std::to_string(header->width) + "x" +
                                          std::to_string(header->height) +
                                          " is empty or too large"});
            continue;
        }
        CaptionItem item;
        item.image = p;
        item.width = header->width;
        item.height = header->height;
        const fs::path rel_parent = p.parent_path().lexically_relative(root);
        item.folder = rel_parent == "." ? "" : path_to_utf8(rel_parent);
        const auto first_dir = rel_parent.begin();
        if (item.folder.size()) item.repeats = folder_repeats(path_to_utf8(*first_dir));
        fs::path caption_path = p;
        caption_path.replace_extension(path_from_utf8(o.caption_extension));
        std::error_code cec;
        if (fs::exists(caption_path, cec)) {
            bool ok = false;
            std::string text = read_caption(caption_path, o, ok);
            if (!ok) {
                ds.problems.push_back({caption_path, text});
                continue;
            }
            item.caption = std::move(text);
        } else {
            ++ds.missing_captions;
        }
        captions_by_folder[item.folder].push_back(item.caption);
        ds.items.push_back(std::move(item));
    }
    if (ds.items.empty()) {
        std::string why = "no usable images (.png, .jpg, .jpeg, .webp, .bmp)";
        if (!ds.problems.empty())
            why += "; first problem: " + path_to_utf8(ds.problems.front().path) + ": " +
                   ds.problems.front().message;
        throw InputError(where, why);
    }
    for (const auto& [folder, caps] : captions_by_folder)
        ds.tag_frequency[folder.empty() ? "." : folder] = tag_frequency(caps);
    return ds;
}

}  // namespace crucible::data
