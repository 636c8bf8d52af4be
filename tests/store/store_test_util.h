#pragma once
// Helpers shared by the store tests and the store benchmark: temporary folders and small
// generated datasets (random bytes named .jpg: importing hashes files, it does not decode them).
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/data/detection_types.h"

namespace crucible::store::test {

class TempDir {
  public:
    explicit TempDir(const std::string& tag = "store");
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::filesystem::path& path() const { return path_; }
    std::filesystem::path operator/(const std::string& utf8) const;

  private:
    std::filesystem::path path_;
};

// Writes `size` pseudo-random bytes (deterministic for a seed).
void write_random_file(const std::filesystem::path& path, std::size_t size, std::uint64_t seed);

// A YOLO-like dataset under `root`: images/<split>/img_<i>.jpg of `image_bytes` random bytes, each
// with 1..3 boxes, classes {"person","car","dog"}; image paths relative to root.
data::DetectionDataset make_dataset(const std::filesystem::path& root, std::size_t images,
                                    std::size_t image_bytes = 512,
                                    const std::string& name_prefix = "img_");

}  // namespace crucible::store::test
