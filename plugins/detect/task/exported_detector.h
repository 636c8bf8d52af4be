#pragma once
// A detector exported to ONNX (`crucible export detect format=onnx`, or any file in that layout:
// input "images" [B, 3, H, W], output "output0" either the raw head output [B, 4 + nc, A] or,
// with NMS in the graph, rows [K, 7] = batch, x1, y1, x2, y2, score, class), run with Crucible's
// ONNX runner (core/engine/onnx_runner.h): `crucible val|predict detect model=x.onnx` and the
// re-scoring after an export use the very file that ships, in every form it takes (fixed or
// dynamic size, fp32 or fp16, with or without NMS). The class names come from its metadata.
#include <torch/torch.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "plugins/detect/metrics/nms.h"
#include "plugins/detect/task/model_source.h"

namespace crucible::engine {
class OnnxRunner;
}

namespace crucible::onnx {
struct Model;
}

namespace crucible::detect {

struct ExportedDetectorInfo {
    std::vector<std::string> names;
    std::int64_t batch = 0;              // 0: chosen at run time
    std::int64_t height = 0, width = 0;  // 0: chosen at run time
    std::int64_t exported_size = 0;      // metadata imgsz: the size it was exported for (0: none)
    bool half = false;                   // fp16 input and output
    bool nms = false;                    // the graph's output is kept boxes
    // "x.onnx (ONNX, 2 classes, fp16, input 1x3x96x96, NMS in the graph)"
    std::string describe(const std::string& file) const;
};

// Reads what the runner needs from the model's input, output and metadata; InputError naming
// `where` when the file is not a detector in that layout. Names: `crucible_names` (a JSON array),
// else the reference exporter's `names` ({0: 'person', 1: 'car'}), else "0", "1", ....
ExportedDetectorInfo exported_detector_info(const onnx::Model& model, const std::string& where);

// True for a model= value naming an ONNX file (by its extension).
bool is_onnx_model(const std::string& model);

// The inference size of `crucible val|predict` for `imgsz` as given (0: the default): an
// exported model's own (ExportedDetector::input_size), else `imgsz` or 640.
class ExportedDetector;
int inference_size(long long imgsz, const ExportedDetector* exported);

class ExportedDetector {
  public:
    // Reads and checks the file (InputError naming it); the graph runs on `device`.
    ExportedDetector(const std::filesystem::path& file, const torch::Device& device);
    ~ExportedDetector();
    ExportedDetector(const ExportedDetector&) = delete;
    ExportedDetector& operator=(const ExportedDetector&) = delete;

    const ExportedDetectorInfo& info() const { return info_; }
    std::string description() const;
    // The square input size to feed: the model's own when fixed (InputError for a non-square
    // one), otherwise `requested`, or for 0 the size it was exported for (640 without one).
    int input_size(int requested) const;

    // Letterboxed images [N, 3, S, S] (RGB in [0, 1]) -> each image's kept boxes [n, 6] (x1, y1,
    // x2, y2 in input pixels, confidence, class), on the CPU. A raw output goes through `nms`; an
    // NMS export's rows keep the graph's choice, less those under nms.conf_threshold, at most
    // nms.max_det per image. Batches are cut to a fixed batch size, the last padded with blanks.
    std::vector<torch::Tensor> detect(const torch::Tensor& images, const NmsOptions& nms) const;

  private:
    // One batch of the model's own size -> output0 in fp32 on the CPU.
    torch::Tensor run_batch(const torch::Tensor& images) const;

    std::filesystem::path file_;
    torch::Device device_;
    ExportedDetectorInfo info_;
    std::unique_ptr<engine::OnnxRunner> runner_;
};

// What `crucible val|predict model=` names, ready on `device`: weights as a LibTorch module
// (load_for_inference), an exported .onnx file as it is.
struct InferenceModel {
    LoadedDetectionModel module;                 // weights; module.model is null for an export
    std::unique_ptr<ExportedDetector> exported;  // an .onnx file
    std::int64_t classes = 0;
    std::vector<std::string> names;  // may be empty for weights that carry none
    std::string description;         // one line for the log
};
InferenceModel load_inference_model(const std::string& model, const torch::Device& device);

}  // namespace crucible::detect
