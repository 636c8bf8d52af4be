#pragma once
// Start from pretrained weights: Ultralytics `.pt` checkpoints (read without Python by
// core/engine/pt) mapped onto Crucible's YOLOv8, whose parameter and buffer names already follow
// the reference layout (`model.0.conv.weight` ...). fp16 weights are cast to the model's dtype.
#include <torch/torch.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/engine/pt/pt_checkpoint.h"
#include "plugins/detect/model/yolo_model.h"

namespace crucible::detect {

// The checkpoint's scale ('n' ... 'x'). InputError(where, ...) when the checkpoint names none.
YoloScale pretrained_scale(const engine::PtCheckpoint& checkpoint, const std::string& where);
// The checkpoint's class count (nc, else the number of names). InputError when unknown.
int64_t pretrained_num_classes(const engine::PtCheckpoint& checkpoint, const std::string& where);

struct PretrainedLoadReport {
    std::vector<std::string> loaded;         // copied from the checkpoint
    std::vector<std::string> reinitialized;  // kept from the fresh model (new class head)
};

// Copies every tensor of the checkpoint into `model`. Strict: the names and shapes must match
// the model's parameters and buffers one to one (InputError listing what differs).
PretrainedLoadReport load_pretrained(DetectionModelImpl& model,
                                     const engine::PtCheckpoint& checkpoint,
                                     const std::string& where);

// A model of the checkpoint's scale and class count holding its weights (train mode, CPU, fp32).
DetectionModel model_from_pretrained(const engine::PtCheckpoint& checkpoint,
                                     const std::string& where);

// A model of the checkpoint's scale with `num_classes` classes. With the checkpoint's own class
// count this is model_from_pretrained; otherwise every weight is kept except the class branch of
// the head: the last conv of each `cv3.<i>` is always new (and any other cv3 tensor whose shape
// changes with the class count), initialised as a fresh model does.
DetectionModel model_from_pretrained_new_head(const engine::PtCheckpoint& checkpoint,
                                              int64_t num_classes, const std::string& where,
                                              PretrainedLoadReport* report = nullptr);

// Reads `path` and builds the model (new head when `num_classes` is given and differs).
// `names_out` receives the checkpoint's class names when not null.
DetectionModel load_pretrained_file(const std::filesystem::path& path,
                                    std::optional<int64_t> num_classes = std::nullopt,
                                    std::vector<std::string>* names_out = nullptr,
                                    PretrainedLoadReport* report = nullptr);

}  // namespace crucible::detect
