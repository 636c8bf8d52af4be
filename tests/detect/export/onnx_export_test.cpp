// The ONNX export of the detector, checked by two runtimes against LibTorch: OpenCV DNN (C++, in
// this process) and ONNX Runtime (onnx_runtime_run.py in the test-only Python environment that
// `installer/setup.sh test` installs; it also runs the ONNX checker). Raw outputs are compared
// value by value; then the final boxes after the same NMS, for a model trained here (the
// fixture's two-epoch model scores its anchors within 1e-7 of each other, so NMS's order would
// be float noise).
#include <gtest/gtest.h>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <cstdio>
#include <filesystem>
#include <map>
#include <string>

#include "core/base/child_process.h"
#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/base/safetensors.h"
#include "core/engine/safetensors_torch.h"
#include "plugins/detect/export/yolo_onnx.h"
#include "plugins/detect/metrics/nms.h"
#include "plugins/detect/onnx_check/onnx_detector.h"
#include "plugins/detect/task/model_source.h"
#include "tests/support/built_programs.h"
#include "tests/support/temp_dir.h"

namespace crucible::detect {
namespace {

namespace fs = std::filesystem;

fs::path fixture(const std::string& name) {
    return fs::path(CRUCIBLE_FIXTURES_DIR) / "yolov8" / name;
}

struct Exported {
    LoadedDetectionModel loaded;
    fs::path file;
};

Exported export_fixture(const fs::path& dir, const YoloOnnxOptions& o, const std::string& name) {
    auto loaded = load_detection_model(path_to_utf8(fixture("yolov8n_shapes11.pt")), std::nullopt);
    loaded.model->eval();
    const fs::path file = dir / name;
    write_file_atomically(
        file, onnx::serialize_onnx_model(yolo_onnx_model(*loaded.model, loaded.names, o)));
    return {std::move(loaded), file};
}

torch::Tensor libtorch_output(DetectionModelImpl& model, const torch::Tensor& images) {
    torch::NoGradGuard no_grad;
    return model.forward(images).decoded;
}

// OpenCV DNN runs the file as crucible-onnx-check does (the export's re-scoring).
torch::Tensor opencv_output(const fs::path& file, const torch::Tensor& images) {
    return OnnxDetector(file, images.size(0)).forward(images);
}

// Runs onnx_runtime_run.py: every input tensor through the model, the outputs back by name.
std::map<std::string, torch::Tensor> onnxruntime_outputs(
    const fs::path& file, const std::map<std::string, torch::Tensor>& inputs) {
    const std::string python = CRUCIBLE_ONNX_PYTHON;
    if (python.empty())
        throw std::runtime_error(
            "CRUCIBLE_ONNX_PYTHON is not set: `bash installer/setup.sh test` installs ONNX Runtime "
            "and names its Python here");
    const fs::path dir = file.parent_path();
    const auto in = dir / (file.stem().string() + ".inputs.safetensors");
    const auto out = dir / (file.stem().string() + ".outputs.safetensors");
    engine::save_safetensors(in, inputs);
    ChildOptions o;
    o.program = python;
    o.args = {path_to_utf8(fs::path(CRUCIBLE_SOURCE_DIR) / "tests" / "detect" / "export" /
                           "onnx_runtime_run.py"),
              path_to_utf8(file), path_to_utf8(in), path_to_utf8(out)};
    o.log_file = dir / (file.stem().string() + ".onnxruntime.log");
    const auto exit = ChildProcess::start(o)->wait();
    const std::string log = read_file_bytes(o.log_file);
    if (exit.code != 0) throw std::runtime_error("onnx_runtime_run.py failed:\n" + log);
    std::printf("%s", log.c_str());
    return engine::load_safetensors(out);
}

// The largest difference in the box rows (cx, cy, w, h, in pixels) and in the score rows.
struct Errors {
    double boxes = 0, scores = 0;
};
Errors errors(const torch::Tensor& a, const torch::Tensor& b) {
    EXPECT_EQ(a.sizes(), b.sizes());
    const auto d = (a.to(torch::kFloat) - b.to(torch::kFloat)).abs();
    return {d.narrow(1, 0, 4).max().item<double>(),
            d.narrow(1, 4, d.size(1) - 4).max().item<double>()};
}

void print(const char* what, const Errors& e) {
    std::printf("%-46s max abs error: boxes %.3g px, scores %.3g\n", what, e.boxes, e.scores);
}

torch::Tensor fixture_images() {
    return engine::load_safetensors(fixture("yolov8n_shapes11_expected.safetensors"))
        .at("input_rgb01_nchw");
}

// Tolerances in fp32. Scores (in [0, 1]): 1e-4. Box rows are in input pixels, the distances
// multiplied by the stride (up to 32), and different convolution code sums in a different order:
// 1e-4 px at 320 px is four float ulps, so the bound is 1e-6 of the input size.
constexpr double kScoreTolerance = 1e-4;
double box_tolerance(std::int64_t size) {
    return 1e-6 * static_cast<double>(size);
}

TEST(OnnxExport, FixtureModelGivesLibTorchsOutputsInBothRuntimes) {
    const auto dir = test_support::scratch_dir("onnx_fixed");
    YoloOnnxOptions o;
    o.height = o.width = 320;
    o.batch = 2;
    auto e = export_fixture(dir, o, "yolov8n_shapes11.onnx");
    const auto images = fixture_images();
    const auto reference =
        engine::load_safetensors(fixture("yolov8n_shapes11_expected.safetensors")).at("output");
    const auto ours = libtorch_output(*e.loaded.model, images);
    const auto cv_out = opencv_output(e.file, images);
    const auto ort_out = onnxruntime_outputs(e.file, {{"images", images}}).at("images");

    const auto cv_err = errors(cv_out, ours), ort_err = errors(ort_out, ours);
    print("OpenCV DNN vs LibTorch (fp32, 2x3x320x320)", cv_err);
    print("ONNX Runtime vs LibTorch (fp32, 2x3x320x320)", ort_err);
    print("ONNX Runtime vs the reference output fixture", errors(ort_out, reference));
    for (const Errors& err : {cv_err, ort_err}) {
        EXPECT_LE(err.scores, kScoreTolerance);
        EXPECT_LE(err.boxes, box_tolerance(320));
    }
    // The reference's own output (PyTorch, the .pt's fp16 weights in fp32) within the same
    // bounds LibTorch itself meets against it.
    const auto ref_err = errors(ort_out, reference);
    EXPECT_LE(ref_err.scores, kScoreTolerance);
    EXPECT_LE(ref_err.boxes, 2 * box_tolerance(320));
    std::printf("model file: %.2f MB\n", static_cast<double>(fs::file_size(e.file)) / 1e6);
}

// Runs the crucible CLI; fails the test with its output when it fails.
void run_cli(const std::vector<std::string>& args, const fs::path& log) {
    ChildOptions o;
    o.program = path_to_utf8(test_support::built_program("crucible", "app/cli"));
    o.args = args;
    o.log_file = log;
    const auto exit = ChildProcess::start(o)->wait();
    ASSERT_EQ(exit.code, 0) << read_file_bytes(log);
}

TEST(OnnxExport, TrainedModelGivesTheSameFinalBoxesEverywhereAndPassesItsReScoring) {
    // A detector that has learnt something: yolov8n, 40 epochs on 128 synthetic 96 px images
    // of 2 classes (the suite's CTest fixture "trained_shapes").
    const fs::path trained = CRUCIBLE_TRAINED_SHAPES_DIR;
    const auto dir = test_support::scratch_dir("onnx_nms");
    const auto weights = trained / "runs" / "train" / "artifacts" / "weights" / "best.safetensors";
    ASSERT_TRUE(fs::exists(weights)) << "the fixture trained_shapes did not run";
    auto loaded = load_detection_model(path_to_utf8(weights), std::nullopt);
    loaded.model->eval();
    YoloOnnxOptions o;
    o.height = o.width = 96;
    o.batch = 16;
    const auto file = dir / "trained.onnx";
    write_file_atomically(
        file, onnx::serialize_onnx_model(yolo_onnx_model(*loaded.model, loaded.names, o)));
    // The 16 validation images stretched to 96 x 96 (the runtimes get the same pixels; how they
    // were fitted does not matter here), as RGB in [0, 1].
    std::vector<torch::Tensor> pictures;
    for (int k = 0; k < 16; ++k) {
        char name[16];
        std::snprintf(name, sizeof name, "%06d.jpg", k);
        const cv::Mat bgr = cv::imread(path_to_utf8(trained / "shapes" / "images" / "val" / name));
        ASSERT_FALSE(bgr.empty()) << name;
        cv::Mat sized, rgb;
        cv::resize(bgr, sized, cv::Size(96, 96));
        cv::cvtColor(sized, rgb, cv::COLOR_BGR2RGB);
        pictures.push_back(torch::from_blob(rgb.data, {96, 96, 3}, torch::kUInt8)
                               .permute({2, 0, 1})
                               .to(torch::kFloat)
                               .div(255));
    }
    const auto images = torch::stack(pictures).contiguous();

    NmsOptions nms;
    nms.conf_threshold = 0.25;  // `crucible predict`'s default
    const auto ours = non_max_suppression(libtorch_output(*loaded.model, images), nms);
    const auto cv = non_max_suppression(opencv_output(file, images), nms);
    const auto ort =
        non_max_suppression(onnxruntime_outputs(file, {{"images", images}}).at("images"), nms);
    std::int64_t boxes = 0;
    for (std::size_t i = 0; i < ours.size(); ++i) {
        boxes += ours[i].size(0);
        for (const torch::Tensor* other : {&cv[i], &ort[i]}) {
            ASSERT_EQ(other->size(0), ours[i].size(0)) << "image " << i << "\nLibTorch:\n"
                                                       << ours[i] << "\nother:\n"
                                                       << *other;
            if (ours[i].size(0) == 0) continue;
            // Same boxes, same classes, same order; coordinates and scores within float noise.
            EXPECT_TRUE(torch::equal(other->select(1, 5), ours[i].select(1, 5)));
            EXPECT_LE((other->narrow(1, 0, 4) - ours[i].narrow(1, 0, 4)).abs().max().item<double>(),
                      box_tolerance(96));
            EXPECT_LE((other->select(1, 4) - ours[i].select(1, 4)).abs().max().item<double>(),
                      kScoreTolerance);
        }
    }
    EXPECT_GE(boxes, 8) << "the trained model found almost nothing in 16 images of shapes";

    // nms=true: the same boxes as `crucible predict`'s NMS, in ONNX Runtime, one row per box
    // (batch, x1, y1, x2, y2, score, class), ordered by image, class and falling score.
    o.nms = true;
    const auto nms_file = dir / "trained_nms.onnx";
    write_file_atomically(
        nms_file, onnx::serialize_onnx_model(yolo_onnx_model(*loaded.model, loaded.names, o)));
    const auto rows = onnxruntime_outputs(nms_file, {{"images", images}}).at("images");
    ASSERT_EQ(rows.dim(), 2);
    ASSERT_EQ(rows.size(1), 7);
    EXPECT_EQ(rows.size(0), boxes) << rows;
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(ours.size()); ++i) {
        const auto mine = rows.index({rows.select(1, 0) == static_cast<double>(i)});
        ASSERT_EQ(mine.size(0), ours[static_cast<std::size_t>(i)].size(0)) << "image " << i;
        if (mine.size(0) == 0) continue;
        // Ours by falling score; the graph's by class, then falling score: order both alike.
        const auto by = [](const torch::Tensor& t, int cls_col, int score_col) {
            return t.index_select(0,
                                  std::get<1>((t.select(1, cls_col) * 10 - t.select(1, score_col))
                                                  .sort(0, /*descending=*/false)));
        };
        const auto a = by(ours[static_cast<std::size_t>(i)], 5, 4);
        const auto b = by(mine, 6, 5);
        EXPECT_TRUE(torch::equal(a.select(1, 5), b.select(1, 6))) << a << b;
        EXPECT_LE((a.narrow(1, 0, 4) - b.narrow(1, 1, 4)).abs().max().item<double>(),
                  box_tolerance(96));
        EXPECT_LE((a.select(1, 4) - b.select(1, 5)).abs().max().item<double>(), kScoreTolerance);
    }

    // `crucible export ... data=` re-scores the file it wrote (OpenCV DNN, in crucible-onnx-check)
    // against the model (LibTorch) on the validation split, and calls it good.
    run_cli({"export", "detect", "model=" + path_to_utf8(weights), "format=onnx", "imgsz=96",
             "batch=4", "out=" + path_to_utf8(dir / "checked.onnx"),
             "data=" + path_to_utf8(trained / "shapes" / "data.yaml")},
            dir / "export.log");
    const std::string log = read_file_bytes(dir / "export.log");
    EXPECT_NE(log.find("re-scored on 16 images of split val"), std::string::npos) << log;
    EXPECT_NE(log.find("export checked"), std::string::npos) << log;
    std::printf(
        "%lld boxes after NMS in 16 images, the same in LibTorch, OpenCV DNN and ONNX "
        "Runtime\n",
        static_cast<long long>(boxes));
}

TEST(OnnxExport, DynamicModelTakesAnyBatchAndSizeInOnnxRuntime) {
    const auto dir = test_support::scratch_dir("onnx_dynamic");
    YoloOnnxOptions o;
    o.dynamic = true;
    auto e = export_fixture(dir, o, "dynamic.onnx");
    torch::manual_seed(7);
    const std::map<std::string, torch::Tensor> inputs = {
        {"b1_256x384", torch::rand({1, 3, 256, 384})},
        {"b3_320x320", torch::rand({3, 3, 320, 320})}};
    const auto outputs = onnxruntime_outputs(e.file, inputs);
    for (const auto& [name, images] : inputs) {
        const auto err = errors(outputs.at(name), libtorch_output(*e.loaded.model, images));
        print(("ONNX Runtime vs LibTorch (dynamic, " + name + ")").c_str(), err);
        EXPECT_LE(err.scores, kScoreTolerance) << name;
        EXPECT_LE(err.boxes, box_tolerance(384)) << name;
    }
}

TEST(OnnxExport, HalfModelIsHalfTheSizeAndCloseInOnnxRuntime) {
    const auto dir = test_support::scratch_dir("onnx_half");
    YoloOnnxOptions o;
    o.height = o.width = 320;
    auto full = export_fixture(dir, o, "full.onnx");
    o.half = true;
    auto half = export_fixture(dir, o, "half.onnx");
    const double ratio = static_cast<double>(fs::file_size(half.file)) /
                         static_cast<double>(fs::file_size(full.file));
    std::printf("fp16 file %.2f MB, fp32 %.2f MB (%.2fx)\n",
                static_cast<double>(fs::file_size(half.file)) / 1e6,
                static_cast<double>(fs::file_size(full.file)) / 1e6, ratio);
    EXPECT_LT(ratio, 0.55);
    const auto images = fixture_images().narrow(0, 0, 1);
    const auto err = errors(onnxruntime_outputs(half.file, {{"images", images}}).at("images"),
                            libtorch_output(*half.loaded.model, images));
    print("ONNX Runtime fp16 vs LibTorch fp32", err);
    // fp16 has 11 significant bits: a box edge near 320 px is stored to 0.25 px, and every layer
    // rounds; the scores keep about three decimals.
    EXPECT_LE(err.boxes, 2.0);
    EXPECT_LE(err.scores, 0.02);
}

TEST(OnnxExport, BadSettingsAreRefusedNamingTheKey) {
    auto loaded = load_detection_model("yolov8n", 2);
    loaded.model->eval();
    const std::vector<std::string> names = {"a", "b"};
    YoloOnnxOptions o;
    o.opset = 11;
    try {
        yolo_onnx_model(*loaded.model, names, o);
        ADD_FAILURE() << "opset 11 accepted";
    } catch (const InputError& e) {
        EXPECT_EQ(e.where(), "opset") << e.what();
    }
    o.opset = 17;
    o.height = 300;
    try {
        yolo_onnx_model(*loaded.model, names, o);
        ADD_FAILURE() << "imgsz 300 accepted";
    } catch (const InputError& e) {
        EXPECT_EQ(e.where(), "imgsz") << e.what();
    }
    o.height = 640;
    EXPECT_THROW(yolo_onnx_model(*loaded.model, {"only one"}, o), Error);
}

TEST(OnnxExport, NamesMetadataIsAPythonDictLiteral) {
    EXPECT_EQ(python_names_literal({"cat", "it's", "a\\b", "划痕"}),
              "{0: 'cat', 1: 'it\\'s', 2: 'a\\\\b', 3: '划痕'}");
    EXPECT_EQ(python_names_literal({}), "{}");
}

TEST(OnnxModel, HalfFloatsRoundToNearestEven) {
    EXPECT_EQ(onnx::half_from_float(0.0f), 0x0000);
    EXPECT_EQ(onnx::half_from_float(-0.0f), 0x8000);
    EXPECT_EQ(onnx::half_from_float(1.0f), 0x3c00);
    EXPECT_EQ(onnx::half_from_float(-2.0f), 0xc000);
    EXPECT_EQ(onnx::half_from_float(65504.0f), 0x7bff);            // the largest half
    EXPECT_EQ(onnx::half_from_float(65520.0f), 0x7c00);            // rounds up to infinity
    EXPECT_EQ(onnx::half_from_float(1.0f + 1.0f / 2048), 0x3c00);  // a tie: to even
    EXPECT_EQ(onnx::half_from_float(1.0f + 3.0f / 2048), 0x3c02);  // a tie: to even, upwards
    EXPECT_EQ(onnx::half_from_float(5.9604645e-8f), 0x0001);       // the smallest subnormal
    EXPECT_EQ(onnx::half_from_float(1e-9f), 0x0000);
    EXPECT_EQ(onnx::half_from_float(std::numeric_limits<float>::infinity()), 0x7c00);
    EXPECT_EQ(onnx::half_from_float(std::numeric_limits<float>::quiet_NaN()) & 0x7c00, 0x7c00);
    EXPECT_NE(onnx::half_from_float(std::numeric_limits<float>::quiet_NaN()) & 0x03ff, 0);
}

TEST(OnnxModel, TensorOfTheWrongByteCountIsRefused) {
    onnx::Model m;
    m.graph.initializers.push_back({"w", onnx::DataType::Float, {2, 2}, std::string(12, '\0')});
    EXPECT_THROW(onnx::serialize_onnx_model(m), Error);
}

}  // namespace
}  // namespace crucible::detect
