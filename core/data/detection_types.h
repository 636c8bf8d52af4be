#pragma once
// The detection dataset model shared by every format reader/writer, validation, the loader, the
// project store and the studio. Boxes are kept normalized (YOLO convention) so that formats
// convert without knowing each other.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace crucible::data {

// One object: class index and box centre/size normalized to [0,1] by the image size.
struct Box {
    int cls = 0;
    double cx = 0, cy = 0, w = 0, h = 0;
    bool difficult =
        false;  // Pascal VOC "difficult" (kept through COCO and VOC; YOLO has no column)
    bool operator==(const Box&) const = default;
};

struct ImageRecord {
    std::filesystem::path path;  // absolute, or relative to DetectionDataset::root
    int width = 0;               // 0 = not known yet
    int height = 0;
    std::string sha256;  // empty = not hashed yet
    std::string split;   // "train", "val", "test"
    std::vector<Box> boxes;
    std::map<std::string, std::string> tags;  // free-form, e.g. station=3
    // The annotation file it was read from, where a format has one per image (VOC's .xml).
    std::filesystem::path annotation_file;
};

struct DetectionDataset {
    std::filesystem::path root;
    std::vector<std::string> class_names;
    std::vector<ImageRecord> images;
};

// Checks a box is finite, inside [0,1] after clipping tolerance and has positive size.
// Returns an empty string when fine, else what is wrong ("width is negative").
std::string box_problem(const Box& box, int class_count);

}  // namespace crucible::data
