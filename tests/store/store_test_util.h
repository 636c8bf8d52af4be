#pragma once
// Helpers shared by the store tests and the store benchmark: small
// generated datasets (random bytes named .jpg: importing hashes files, it does not decode them).
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/data/detection_types.h"
#include "tests/support/temp_dir.h"

namespace crucible::store::test {

// The tests' one temporary folder (tests/support/temp_dir.h).
using TempDir = test_support::TempDir;

// Writes `size` pseudo-random bytes (deterministic for a seed).
void write_random_file(const std::filesystem::path& path, std::size_t size, std::uint64_t seed);

// A YOLO-like dataset under `root`: images/<split>/img_<i>.jpg of `image_bytes` random bytes, each
// with 1..3 boxes, classes {"person","car","dog"}; image paths relative to root.
data::DetectionDataset make_dataset(const std::filesystem::path& root, std::size_t images,
                                    std::size_t image_bytes = 512,
                                    const std::string& name_prefix = "img_");

// The message of what `fn` throws, or "<no exception>".
std::string message_of(const std::function<void()>& fn);

}  // namespace crucible::store::test
