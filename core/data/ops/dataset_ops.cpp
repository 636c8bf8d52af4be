#include "core/data/ops/dataset_ops.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <tuple>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/sha256.h"
#include "core/data/formats/format_util.h"

namespace crucible::data {
namespace fs = std::filesystem;

namespace {

// splitmix64: a fixed, portable generator (std distributions differ between libraries).
struct SplitMix {
    std::uint64_t state;
    std::uint64_t next() {
        std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    std::uint64_t below(std::uint64_t n) {  // uniform in [0, n) without modulo bias
        const std::uint64_t limit = ~std::uint64_t{0} - (~std::uint64_t{0} % n);
        std::uint64_t r;
        do
            r = next();
        while (r >= limit);
        return r % n;
    }
};

std::string relative_key(const DetectionDataset& dataset, const ImageRecord& record) {
    const fs::path p = detail::image_path(dataset, record);
    if (!dataset.root.empty()) {
        const auto rel = detail::normalized_absolute(p).lexically_relative(
            detail::normalized_absolute(dataset.root));
        if (!rel.empty() && *rel.begin() != "..") {
            const auto u8 = rel.generic_u8string();
            return std::string(u8.begin(), u8.end());
        }
    }
    const auto u8 = p.generic_u8string();
    return std::string(u8.begin(), u8.end());
}

}  // namespace

void split_train_val(DetectionDataset& dataset, double val_fraction, std::uint64_t seed) {
    if (!(val_fraction >= 0 && val_fraction <= 1))
        throw InputError("val_fraction", "must lie in [0, 1]");
    auto& images = dataset.images;
    // How many images hold each class.
    std::map<int, std::size_t> images_with;
    for (const auto& im : images) {
        std::set<int> classes;
        for (const auto& b : im.boxes)
            classes.insert(b.cls);
        for (int c : classes)
            ++images_with[c];
    }
    // Group key: the rarest class of the image (ties: the lower id); -1 for background.
    std::map<int, std::vector<std::size_t>> groups;
    for (std::size_t i = 0; i < images.size(); ++i) {
        int key = -1;
        for (const auto& b : images[i].boxes)
            if (key < 0 || images_with[b.cls] < images_with[key] ||
                (images_with[b.cls] == images_with[key] && b.cls < key))
                key = b.cls;
        groups[key].push_back(i);
    }
    SplitMix rng{seed ^ 0x6372756369626C65ull};
    std::size_t total = 0, assigned_val = 0;
    for (auto& [key, members] : groups) {
        // Order independent of the input order: by path, then a seeded Fisher-Yates shuffle.
        std::sort(members.begin(), members.end(), [&](std::size_t a, std::size_t b) {
            return relative_key(dataset, images[a]) < relative_key(dataset, images[b]);
        });
        for (std::size_t i = members.size(); i > 1; --i)
            std::swap(members[i - 1], members[rng.below(i)]);
        // Cumulative rounding: the total val count matches round(N * fraction) overall.
        total += members.size();
        const auto target = static_cast<std::size_t>(std::llround(double(total) * val_fraction));
        const std::size_t take =
            std::min(members.size(), target > assigned_val ? target - assigned_val : 0);
        for (std::size_t k = 0; k < members.size(); ++k)
            images[members[k]].split = k < take ? "val" : "train";
        assigned_val += take;
    }
}

void remap_classes(DetectionDataset& dataset,
                   const std::map<std::string, std::string>& old_to_new) {
    for (const auto& [from, to] : old_to_new)
        if (std::find(dataset.class_names.begin(), dataset.class_names.end(), from) ==
            dataset.class_names.end())
            throw InputError("class '" + detail::safe_utf8(from) + "'",
                             "is not a class of this dataset");
    std::vector<std::string> names;
    std::vector<int> new_index(dataset.class_names.size(), -1);
    for (std::size_t i = 0; i < dataset.class_names.size(); ++i) {
        const auto it = old_to_new.find(dataset.class_names[i]);
        const std::string target = it == old_to_new.end() ? dataset.class_names[i] : it->second;
        if (target.empty()) continue;
        auto pos = std::find(names.begin(), names.end(), target);
        if (pos == names.end()) {
            names.push_back(target);
            pos = names.end() - 1;
        }
        new_index[i] = static_cast<int>(pos - names.begin());
    }
    for (auto& im : dataset.images) {
        std::vector<Box> kept;
        for (auto b : im.boxes) {
            if (b.cls < 0 || b.cls >= int(new_index.size()) || new_index[b.cls] < 0) continue;
            b.cls = new_index[b.cls];
            kept.push_back(b);
        }
        im.boxes = std::move(kept);
    }
    dataset.class_names = std::move(names);
}

void delete_classes(DetectionDataset& dataset, const std::vector<std::string>& names) {
    std::map<std::string, std::string> mapping;
    for (const auto& n : names)
        mapping[n] = "";
    remap_classes(dataset, mapping);
}

DetectionDataset merge_datasets(const DetectionDataset& a, const DetectionDataset& b) {
    DetectionDataset out;
    out.root = a.root;
    out.class_names = a.class_names;
    std::vector<int> b_index;
    for (const auto& name : b.class_names) {
        auto pos = std::find(out.class_names.begin(), out.class_names.end(), name);
        if (pos == out.class_names.end()) {
            out.class_names.push_back(name);
            pos = out.class_names.end() - 1;
        }
        b_index.push_back(static_cast<int>(pos - out.class_names.begin()));
    }
    for (const auto& im : a.images) {
        out.images.push_back(im);
        out.images.back().path = detail::normalized_absolute(detail::image_path(a, im));
    }
    for (const auto& im : b.images) {
        ImageRecord copy = im;
        copy.path = detail::normalized_absolute(detail::image_path(b, im));
        for (auto& box : copy.boxes) {
            if (box.cls < 0 || box.cls >= int(b_index.size()))
                throw InputError(detail::safe_utf8(path_to_utf8(copy.path)),
                                 "box class id has no class name");
            box.cls = b_index[box.cls];
        }
        out.images.push_back(std::move(copy));
    }
    return out;
}

void hash_images(DetectionDataset& dataset) {
    for (auto& im : dataset.images)
        if (im.sha256.empty()) im.sha256 = sha256_file(detail::image_path(dataset, im));
}

std::vector<std::vector<std::size_t>> find_duplicate_images(DetectionDataset& dataset) {
    hash_images(dataset);
    std::map<std::string, std::vector<std::size_t>> by_hash;
    for (std::size_t i = 0; i < dataset.images.size(); ++i)
        by_hash[dataset.images[i].sha256].push_back(i);
    std::vector<std::vector<std::size_t>> groups;
    for (auto& [hash, members] : by_hash)
        if (members.size() > 1) groups.push_back(members);
    std::sort(groups.begin(), groups.end());
    return groups;
}

std::size_t remove_duplicate_images(DetectionDataset& dataset) {
    const auto groups = find_duplicate_images(dataset);
    std::vector<bool> drop(dataset.images.size(), false);
    std::size_t removed = 0;
    for (const auto& g : groups)
        for (std::size_t k = 1; k < g.size(); ++k, ++removed)
            drop[g[k]] = true;
    std::vector<ImageRecord> kept;
    for (std::size_t i = 0; i < dataset.images.size(); ++i)
        if (!drop[i]) kept.push_back(std::move(dataset.images[i]));
    dataset.images = std::move(kept);
    return removed;
}

Json dataset_manifest(DetectionDataset& dataset) {
    hash_images(dataset);
    for (auto& im : dataset.images)
        if (im.width <= 0 || im.height <= 0) {
            const auto [w, h] = detail::image_size(dataset, im);  // header only, no decode
            im.width = w;
            im.height = h;
        }
    std::vector<std::pair<std::string, Json>> entries;
    for (const auto& im : dataset.images) {
        std::vector<Box> boxes = im.boxes;
        std::sort(boxes.begin(), boxes.end(), [](const Box& x, const Box& y) {
            return std::tie(x.cls, x.cx, x.cy, x.w, x.h, x.difficult) <
                   std::tie(y.cls, y.cx, y.cy, y.w, y.h, y.difficult);
        });
        Json jb = Json::array();
        for (const auto& b : boxes)
            jb.push_back({b.cls, b.cx, b.cy, b.w, b.h, b.difficult ? 1 : 0});
        const std::string path = detail::safe_utf8(relative_key(dataset, im));
        Json entry = {{"path", path},        {"sha256", im.sha256},           {"width", im.width},
                      {"height", im.height}, {"split", detail::split_of(im)}, {"boxes", jb},
                      {"tags", im.tags}};
        entries.emplace_back(im.sha256 + "\n" + path, std::move(entry));
    }
    std::sort(entries.begin(), entries.end(),
              [](const auto& x, const auto& y) { return x.first < y.first; });
    Json images = Json::array();
    for (auto& e : entries)
        images.push_back(std::move(e.second));
    return {{"kind", "crucible-detection-manifest"},
            {"version", 1},
            {"classes", dataset.class_names},
            {"images", images}};
}

std::string manifest_text(const Json& manifest) {
    return manifest.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string manifest_id(const Json& manifest) {
    return sha256_hex(manifest_text(manifest));
}

}  // namespace crucible::data
