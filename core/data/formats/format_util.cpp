#include "core/data/formats/format_util.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/data/image_io.h"

namespace crucible::data::detail {
namespace fs = std::filesystem;

bool has_utf8_name(const fs::path& path) {
    return is_valid_utf8(path_to_utf8(path));
}

bool is_image_file_name(const fs::path& path) {
    std::string ext = path_to_utf8(path.extension());
    for (auto& c : ext)
        c = char(std::tolower(static_cast<unsigned char>(c)));
    static const std::set<std::string> known{".jpg",  ".jpeg", ".png", ".bmp",
                                             ".webp", ".tif",  ".tiff"};
    return known.count(ext) > 0;
}

std::vector<fs::path> list_images(const fs::path& folder) {
    std::vector<fs::path> out;
    std::error_code ec;
    fs::recursive_directory_iterator it(folder, fs::directory_options::skip_permission_denied, ec),
        end;
    for (; !ec && it != end; it.increment(ec)) {
        if (it->is_directory(ec)) continue;
        if (is_image_file_name(it->path())) out.push_back(normalized_absolute(it->path()));
    }
    std::sort(out.begin(), out.end());
    return out;
}

fs::path image_path(const DetectionDataset& dataset, const ImageRecord& record) {
    if (record.path.is_absolute() || dataset.root.empty()) return record.path;
    return dataset.root / record.path;
}

std::string inspect_image(ImageRecord& record, const fs::path& file, const LoadOptions& options) {
    std::optional<ImageHeader> header;
    if (options.check_images) {
        // One read serves the full check and the header.
        std::error_code ec;
        if (!fs::exists(file, ec)) return "image file is missing";
        if (fs::is_directory(file, ec)) return "is a directory, not an image file";
        const auto size = fs::file_size(file, ec);
        if (ec) return "cannot read image file: " + ec.message();
        if (size > options.image_limits.max_file_bytes)
            return "file is " + std::to_string(size) + " bytes, over the limit of " +
                   std::to_string(options.image_limits.max_file_bytes);
        std::string bytes;
        try {
            bytes = read_file_bytes_limited(file, options.image_limits.max_file_bytes);
        } catch (const InputError&) {
            return "cannot read image file";
        }
        if (auto problem = image_bytes_problem(bytes, options.image_limits); !problem.empty())
            return problem;
        header = peek_image_header(bytes);
    } else if (options.read_image_sizes) {
        header = read_image_header(file);
    } else {
        return "";
    }
    if (!header) {
        std::error_code ec;
        if (!fs::exists(file, ec)) return "image file is missing";
        return "cannot read the image header (unknown format or corrupt file)";
    }
    record.width = header->width;
    record.height = header->height;
    return "";
}

std::pair<int, int> image_size(const DetectionDataset& dataset, const ImageRecord& record) {
    if (record.width > 0 && record.height > 0) return {record.width, record.height};
    const auto file = image_path(dataset, record);
    const auto header = read_image_header(file);
    if (!header || header->width <= 0 || header->height <= 0)
        throw InputError(safe_utf8(path_to_utf8(file)),
                         "cannot read the image size from its header");
    return {header->width, header->height};
}

std::vector<fs::path> copy_images(const DetectionDataset& dataset,
                                  const std::vector<fs::path>& folders, ImageFiles files) {
    std::map<fs::path, std::set<std::string>> used;  // folder -> stems taken (labels share stems)
    std::vector<fs::path> out;
    out.reserve(dataset.images.size());
    for (std::size_t i = 0; i < dataset.images.size(); ++i) {
        const auto& record = dataset.images[i];
        const auto source = image_path(dataset, record);
        const fs::path& folder = folders[i];
        std::string stem = path_to_utf8(source.stem());
        const std::string ext = path_to_utf8(source.extension());
        if (stem.empty()) stem = "image";
        auto& taken = used[folder];
        std::string chosen = stem;
        for (int k = 1; taken.count(chosen); ++k)
            chosen = stem + "_" + std::to_string(k);
        taken.insert(chosen);
        const fs::path dest = folder / path_from_utf8(chosen + ext);
        fs::create_directories(folder);
        std::error_code ec;
        if (normalized_absolute(source) != normalized_absolute(dest) && files == ImageFiles::Link) {
            link_or_copy_atomically(source, dest);
        } else if (normalized_absolute(source) != normalized_absolute(dest)) {
            fs::copy_file(source, dest, fs::copy_options::overwrite_existing, ec);
            if (ec)
                throw Error(safe_utf8(path_to_utf8(source)) + ": cannot copy to " +
                            safe_utf8(path_to_utf8(dest)) + ": " + ec.message());
        }
        out.push_back(dest);
    }
    return out;
}

std::string split_of(const ImageRecord& record) {
    return record.split.empty() ? "train" : record.split;
}

std::optional<std::string> read_text_file(const fs::path& path, std::uint64_t max_bytes,
                                          const std::string& where,
                                          std::vector<DatasetProblem>& problems) {
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
        problems.push_back({where, "is a directory, not a file"});
        return std::nullopt;
    }
    const auto size = fs::file_size(path, ec);
    if (ec) {
        problems.push_back({where, "cannot read file: " + ec.message()});
        return std::nullopt;
    }
    if (size > max_bytes) {
        problems.push_back({where, "file is " + std::to_string(size) +
                                       " bytes, over the limit of " + std::to_string(max_bytes) +
                                       " bytes"});
        return std::nullopt;
    }
    try {
        return read_file_bytes_limited(path, max_bytes);
    } catch (const InputError& e) {
        problems.push_back({where, "cannot read file"});
        return std::nullopt;
    }
}

}  // namespace crucible::data::detail

#include <fstream>

namespace crucible::data::detail {
void write_text_file(const std::filesystem::path& path, std::string_view text) {
    if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (out) out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.flush();
    if (!out) throw Error(safe_utf8(path_to_utf8(path)) + ": cannot write file");
}
}  // namespace crucible::data::detail
