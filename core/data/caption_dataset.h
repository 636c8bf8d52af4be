#pragma once
// Image folders with captions (kohya style, DESIGN.md "File formats"): every image (.png, .jpg,
// .jpeg, .webp, .bmp) under the root, its caption in the `.txt` file of the same stem beside it.
// Sub-folders named "<repeats>_<name>" (e.g. "10_sks dog") repeat their images that many times
// per epoch. Unusable files are skipped with a reason (problem list), never a crash; a folder
// with no usable image is an InputError.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace crucible::data {

struct CaptionItem {
    std::filesystem::path image;
    std::string caption;  // UTF-8, trimmed; "" when the image has no caption file
    int width = 0, height = 0;
    int repeats = 1;
    std::string folder;  // sub-folder name relative to the root ("" at the top)
};

struct CaptionProblem {
    std::filesystem::path path;
    std::string message;
};

struct CaptionDataset {
    std::filesystem::path root;
    std::vector<CaptionItem> items;        // sorted by path
    std::vector<CaptionProblem> problems;  // skipped files and why
    int missing_captions = 0;
    // Tag counts per folder (kohya's ss_tag_frequency).
    std::map<std::string, std::map<std::string, int>> tag_frequency;
    // Items with repeats applied (what one epoch sees).
    std::size_t epoch_size() const;
};

struct CaptionFolderOptions {
    std::string caption_extension = ".txt";
    std::uint64_t max_caption_bytes = 64 * 1024;
    std::uint64_t max_image_pixels = 100'000'000;
    std::size_t max_images = 1'000'000;
    int max_depth = 4;
};

CaptionDataset load_caption_folder(const std::filesystem::path& root,
                                   const CaptionFolderOptions& options = {});

// "10_sks dog" -> 10; 1 for names without a positive count prefix.
int folder_repeats(const std::string& folder_name);

}  // namespace crucible::data
