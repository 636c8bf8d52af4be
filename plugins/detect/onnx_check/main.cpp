// crucible-onnx-check: scores an exported detector (fp32, fixed size) on a dataset's split with
// OpenCV DNN and prints one JSON line: {"images": N, "map50": x, "map50_95": y}. `crucible
// export detect format=onnx data=...` runs it to re-score what it wrote.
//
//   crucible-onnx-check MODEL.onnx DATASET SPLIT IMGSZ BATCH
//
// A program of its own because OpenCV DNN brings libprotobuf, which cannot share a process
// with Debian's libsentencepiece (the LLM task's tokenizer): that library carries its own,
// older copy of protobuf's symbols, and loading both crashes before main.
#include <algorithm>
#include <cstdio>
#include <string>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/json.h"
#include "plugins/detect/cli/dataset_argument.h"
#include "plugins/detect/onnx_check/onnx_detector.h"
#include "plugins/detect/task/detection_validator.h"

namespace {

int check_main(int argc, char** argv) {
    using namespace crucible;
    if (argc != 6)
        throw InputError("arguments",
                         "usage: crucible-onnx-check MODEL.onnx DATASET SPLIT IMGSZ BATCH");
    const auto dataset = detect::load_data_argument(argv[2], /*read_image_sizes=*/true);
    detect::ValidatorOptions vo;
    vo.imgsz = std::stoi(argv[4]);
    const std::int64_t batch = std::stoll(argv[5]);
    vo.batch = static_cast<int>(std::max<std::int64_t>(batch, 8));
    detect::DetectionValidator validator(dataset, argv[3], vo);
    detect::OnnxDetector onnx(path_from_utf8(argv[1]), batch);
    const auto r =
        validator.run([&onnx](const torch::Tensor& images) { return onnx.forward(images); });
    const Json out = {
        {"images", r.metrics.images}, {"map50", r.metrics.map50}, {"map50_95", r.metrics.map50_95}};
    std::printf("%s\n", out.dump().c_str());
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    return crucible::run_at_boundary("crucible-onnx-check", check_main, argc, argv);
}
