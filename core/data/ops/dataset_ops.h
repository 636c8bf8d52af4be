#pragma once
// Operations on detection datasets: stratified split, class remap/merge/delete, merging two
// datasets, duplicate images by SHA-256, and the manifest whose hash names an immutable dataset
// version. All deterministic: the same input and seed give the same result on every platform.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/base/json.h"
#include "core/data/detection_types.h"

namespace crucible::data {

// Puts about `val_fraction` of the images (of `from_splits`, all when empty) into "val" and the
// rest into "train", stratified: images are grouped by their rarest class (background images form
// a group of their own) so that every class is represented in val in proportion. Depends only on
// the image paths, their boxes and the seed (not on the order of `dataset.images`).
void split_train_val(DetectionDataset& dataset, double val_fraction, std::uint64_t seed);

// Renames, merges and deletes classes: `old_to_new` maps an old class name to a new one (two old
// names mapped to one new name merge them) or to "" (the class and its boxes are deleted). Names
// not in the map keep their name. The new class order follows the old one. InputError for a name
// in the map that the dataset does not have.
void remap_classes(DetectionDataset& dataset, const std::map<std::string, std::string>& old_to_new);
void delete_classes(DetectionDataset& dataset, const std::vector<std::string>& names);

// `a` then `b`, class names unified by name (a's order, then b's new names); image paths become
// absolute.
DetectionDataset merge_datasets(const DetectionDataset& a, const DetectionDataset& b);

// Fills ImageRecord::sha256 where empty (reads the files).
void hash_images(DetectionDataset& dataset);
// Groups of indices into dataset.images whose files have the same SHA-256 (hashes them first);
// each group sorted, groups sorted by their first index. Only groups of 2 or more.
std::vector<std::vector<std::size_t>> find_duplicate_images(DetectionDataset& dataset);
// Keeps the first image of each duplicate group; returns how many were removed.
std::size_t remove_duplicate_images(DetectionDataset& dataset);

// The manifest: {"kind":"crucible-detection-manifest","version":1,"classes":[...],
// "images":[{"path","sha256","width","height","split","boxes":[[cls,cx,cy,w,h,difficult]...],
// "tags"}...]}, images sorted by (sha256, path), boxes sorted, paths relative to the root with
// "/" separators. Hashes the images where needed.
Json dataset_manifest(DetectionDataset& dataset);
// Canonical text: compact JSON, keys sorted, numbers in shortest round-trip form.
std::string manifest_text(const Json& manifest);
// SHA-256 of the canonical text: the dataset version id.
std::string manifest_id(const Json& manifest);

}  // namespace crucible::data
