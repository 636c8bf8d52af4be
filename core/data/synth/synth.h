#pragma once
// Deterministic synthetic detection data: coloured shapes (one class per shape kind) on cluttered
// backgrounds (gradients, noise, distractor lines and blobs that are not classes), with exact
// labels computed from the drawn pixels. Tests, the demo and the benchmarks use it. The same
// options and seed give byte-identical files on every platform (own RNG, see random.h).
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "core/data/detection_types.h"

namespace crucible::data {

struct SynthOptions {
    int train = 64;
    int val = 16;
    int classes = 4;  // 1..synth_max_classes()
    int imgsz = 640;  // long side of every image; the short side is 75-100 % of it
    std::uint64_t seed = 0;
    int max_objects = 6;  // per image (at least 1)
    int jpeg_quality = 90;
};

int synth_max_classes();
// The first `classes` shape names: circle, rectangle, triangle, star, cross, diamond, ...
std::vector<std::string> synth_class_names(int classes);

struct SynthSample {
    cv::Mat image;           // 8-bit BGR
    std::vector<Box> boxes;  // normalized; tight around the drawn pixels of each object
    // Optional (with_instances): CV_16U, 0 = background, i+1 = pixels of boxes[i].
    cv::Mat instances;
};

// Sample `index` of split `split` ("train", "val", or any name) for these options. Throws
// InputError naming the option when the options are out of range.
SynthSample make_synth_sample(const SynthOptions& options, const std::string& split, int index,
                              bool with_instances = false);

// Writes the Ultralytics layout: out/data.yaml, out/images/{train,val}/NNNNNN.jpg,
// out/labels/{train,val}/NNNNNN.txt. Returns the data.yaml path.
std::filesystem::path write_synth_dataset(const std::filesystem::path& out,
                                          const SynthOptions& options);

}  // namespace crucible::data
