#include "plugins/detect/onnx_check/onnx_detector.h"

#include <opencv2/core.hpp>
#include <opencv2/dnn.hpp>

#include <vector>

#include "core/base/error.h"
#include "core/base/file_io.h"

namespace crucible::detect {

struct OnnxDetector::Net {
    cv::dnn::Net net;
};

OnnxDetector::OnnxDetector(const std::filesystem::path& file, std::int64_t batch)
    : net_(std::make_unique<Net>()), batch_(batch), file_(file) {
    try {
        net_->net = cv::dnn::readNetFromONNX(path_to_utf8(file));
    } catch (const cv::Exception& e) {
        throw InputError(path_to_utf8(file), std::string("OpenCV DNN cannot load it: ") + e.what());
    }
    net_->net.setPreferableBackend(cv::dnn::DNN_BACKEND_OPENCV);
}

OnnxDetector::~OnnxDetector() = default;

torch::Tensor OnnxDetector::forward(const torch::Tensor& images) {
    std::vector<torch::Tensor> outputs;
    const std::int64_t n = images.size(0);
    for (std::int64_t first = 0; first < n; first += batch_) {
        const std::int64_t count = std::min(batch_, n - first);
        auto piece = images.narrow(0, first, count).to(torch::kCPU, torch::kFloat);
        if (count < batch_)
            piece = torch::cat({piece, torch::zeros({batch_ - count, piece.size(1), piece.size(2),
                                                     piece.size(3)})});
        piece = piece.contiguous();
        const std::vector<int> dims(piece.sizes().begin(), piece.sizes().end());
        cv::Mat y;
        try {
            net_->net.setInput(cv::Mat(dims, CV_32F, piece.data_ptr<float>()));
            y = net_->net.forward();
        } catch (const cv::Exception& e) {
            throw Error(path_to_utf8(file_) + ": OpenCV DNN failed to run it: " + e.what());
        }
        const std::vector<std::int64_t> shape(y.size.p, y.size.p + y.dims);
        outputs.push_back(torch::from_blob(const_cast<float*>(y.ptr<float>()), shape, torch::kFloat)
                              .narrow(0, 0, count)
                              .clone());
    }
    return torch::cat(outputs);
}

}  // namespace crucible::detect
