#pragma once
// Edits of a detection dataset inside the project, each in one transaction: an image's boxes,
// the classes (add, rename, merge one into another, colour) and an image's tags (the verified
// flag is the tag "verified"). Every edit that changes what trains recomputes the dataset's
// version hash, so a run records which labels it trained on; colours and tags do not count.
#include <cstdint>
#include <string>
#include <vector>

#include "core/data/detection_types.h"
#include "core/store/project.h"

namespace crucible::store {

// The image tag that marks an image's labels as checked by a person (labelImg's "verify").
inline constexpr const char* kVerifiedTag = "verified";

// Replaces an image's boxes; every box is checked (data::box_problem) and InputError names the
// image and box at fault.
void save_image_boxes(Project& project, std::int64_t dataset_id, std::int64_t image_id,
                      const std::vector<data::Box>& boxes);
std::vector<data::Box> read_image_boxes(Project& project, std::int64_t image_id);

// A new class at the end; returns its index. Refuses an empty name or one the dataset has.
int add_class(Project& project, std::int64_t dataset_id, const std::string& name);
void rename_class(Project& project, std::int64_t dataset_id, int index, const std::string& name);
// Boxes of class `from` become class `into`; `from` is removed and the classes after it move
// down by one (their boxes with them). Returns how many boxes changed class.
std::int64_t merge_class(Project& project, std::int64_t dataset_id, int from, int into);
// "#rrggbb", or "" for the studio's palette; anything else is refused.
void set_class_color(Project& project, std::int64_t dataset_id, int index,
                     const std::string& color);
std::vector<std::string> dataset_class_names(Project& project, std::int64_t dataset_id);
std::vector<std::string> class_colors(Project& project, std::int64_t dataset_id);       // by index
std::vector<std::int64_t> class_box_counts(Project& project, std::int64_t dataset_id);  // by index

// Sets (or, with an empty value, removes) one tag of an image.
void set_image_tag(Project& project, std::int64_t image_id, const std::string& key,
                   const std::string& value);

}  // namespace crucible::store
