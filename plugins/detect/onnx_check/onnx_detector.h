#pragma once
// An exported detector run with OpenCV DNN (what inspection software does), for re-scoring an
// export on the validation set: fp32 models of a fixed input size. Batches smaller than the
// model's are padded with blank images, larger ones run in pieces.
#include <torch/torch.h>

#include <cstdint>
#include <filesystem>
#include <memory>

namespace crucible::detect {

class OnnxDetector {
  public:
    // Throws InputError naming the file when OpenCV cannot load it.
    OnnxDetector(const std::filesystem::path& file, std::int64_t batch);
    ~OnnxDetector();
    OnnxDetector(const OnnxDetector&) = delete;
    OnnxDetector& operator=(const OnnxDetector&) = delete;

    // images [N, 3, S, S] (RGB in [0, 1]) -> output0 [N, 4 + nc, A], on the CPU.
    torch::Tensor forward(const torch::Tensor& images);

  private:
    struct Net;
    std::unique_ptr<Net> net_;
    std::int64_t batch_;
    std::filesystem::path file_;
};

}  // namespace crucible::detect
