// Runs a detector exported by `crucible export detect model=best.safetensors format=onnx` with
// OpenCV DNN alone and prints its boxes: what inspection software needs, in one file.
//
//   onnx_inference MODEL.onnx IMAGE [imgsz=640] [conf=0.25] [iou=0.7]
//
// The model takes "images" [1, 3, imgsz, imgsz], RGB in [0, 1], the image letterboxed (scaled to
// fit, centred, padded with grey 114), and gives "output0" [1, 4 + classes, anchors]: per anchor
// the box centre, width and height in input pixels, then one score per class. Boxes are mapped
// back to the image and overlapping boxes of a class removed (non-maximum suppression).
#include <opencv2/core.hpp>
#include <opencv2/dnn.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

namespace {

struct Letterbox {
    cv::Mat input;  // imgsz x imgsz, 3 channels, BGR
    double scale = 1;
    double pad_x = 0, pad_y = 0;
};

Letterbox letterbox(const cv::Mat& image, int size) {
    Letterbox l;
    l.scale =
        std::min(static_cast<double>(size) / image.cols, static_cast<double>(size) / image.rows);
    const int w = static_cast<int>(std::round(image.cols * l.scale));
    const int h = static_cast<int>(std::round(image.rows * l.scale));
    l.pad_x = (size - w) / 2.0;
    l.pad_y = (size - h) / 2.0;
    cv::Mat resized;
    cv::resize(image, resized, cv::Size(w, h), 0, 0, cv::INTER_LINEAR);
    const int top = static_cast<int>(std::round(l.pad_y - 0.1));
    const int left = static_cast<int>(std::round(l.pad_x - 0.1));
    cv::copyMakeBorder(resized, l.input, top, size - h - top, left, size - w - left,
                       cv::BORDER_CONSTANT, cv::Scalar(114, 114, 114));
    return l;
}

double argument(int argc, char** argv, const std::string& key, double fallback) {
    for (int i = 3; i < argc; ++i) {
        const std::string a = argv[i];
        if (a.rfind(key + "=", 0) == 0) return std::atof(a.c_str() + key.size() + 1);
    }
    return fallback;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s MODEL.onnx IMAGE [imgsz=640] [conf=0.25] [iou=0.7]\n",
                     argv[0]);
        return 2;
    }
    try {
        const int size = static_cast<int>(argument(argc, argv, "imgsz", 640));
        const float conf = static_cast<float>(argument(argc, argv, "conf", 0.25));
        const float iou = static_cast<float>(argument(argc, argv, "iou", 0.7));
        cv::dnn::Net net = cv::dnn::readNetFromONNX(argv[1]);
        const cv::Mat image = cv::imread(argv[2], cv::IMREAD_COLOR);
        if (image.empty()) throw std::runtime_error(std::string("cannot read image ") + argv[2]);

        const Letterbox l = letterbox(image, size);
        // RGB in [0, 1], NCHW.
        net.setInput(cv::dnn::blobFromImage(l.input, 1.0 / 255, cv::Size(), cv::Scalar(), true));
        const cv::Mat out = net.forward();  // [1, 4 + classes, anchors]
        const int rows = out.size[1], anchors = out.size[2];
        const cv::Mat table(rows, anchors, CV_32F, const_cast<float*>(out.ptr<float>()));

        std::vector<cv::Rect2d> boxes;
        std::vector<float> scores;
        std::vector<int> classes;
        for (int a = 0; a < anchors; ++a) {
            int best = 0;
            for (int c = 1; c < rows - 4; ++c)
                if (table.at<float>(4 + c, a) > table.at<float>(4 + best, a)) best = c;
            const float score = table.at<float>(4 + best, a);
            if (score <= conf) continue;
            const double cx = (table.at<float>(0, a) - l.pad_x) / l.scale;
            const double cy = (table.at<float>(1, a) - l.pad_y) / l.scale;
            const double w = table.at<float>(2, a) / l.scale, h = table.at<float>(3, a) / l.scale;
            boxes.emplace_back(cx - w / 2, cy - h / 2, w, h);
            scores.push_back(score);
            classes.push_back(best);
        }
        // Per-class suppression in one call: each class's boxes are moved far from the others'.
        std::vector<cv::Rect2d> apart = boxes;
        for (std::size_t i = 0; i < apart.size(); ++i)
            apart[i].x += 10000.0 * classes[i];
        std::vector<int> kept;
        cv::dnn::NMSBoxes(apart, scores, conf, iou, kept);
        std::printf("%s: %zu boxes (model input %dx%d, %d classes)\n", argv[2], kept.size(), size,
                    size, rows - 4);
        for (int i : kept) {
            const auto& b = boxes[static_cast<std::size_t>(i)];
            std::printf("class %d  score %.3f  box %.1f %.1f %.1f %.1f\n",
                        classes[static_cast<std::size_t>(i)], scores[static_cast<std::size_t>(i)],
                        b.x, b.y, b.x + b.width, b.y + b.height);
        }
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}
