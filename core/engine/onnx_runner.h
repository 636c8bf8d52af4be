#pragma once
// An ONNX inference graph run on LibTorch, node by node: how Crucible runs its own exports
// (`crucible val|predict detect model=x.onnx`, the re-scoring after `crucible export`) in every
// form they take, dynamic sizes, fp16 and NMS in the graph included, which OpenCV DNN 4.6 does
// not load. It follows the ONNX operator specifications (opset 11 to 21) for the operators the
// exporters write, each checked against ONNX Runtime by the export tests; a graph with any other
// operator, or an attribute value not covered, is refused by name before anything runs.
#include <torch/torch.h>

#include <string>
#include <unordered_map>
#include <vector>

#include "core/base/onnx_model.h"

namespace crucible::engine {

class OnnxRunner {
  public:
    // The graph's constants go to `device`. `where` (the file) leads every error. Throws
    // InputError naming the node and operator the runner does not run.
    OnnxRunner(const onnx::Model& model, torch::Device device, std::string where);

    // `inputs` in the graph's input order (moved to the device; their dtype must be the
    // declared one). Returns the outputs in the graph's output order, on the device.
    std::vector<torch::Tensor> run(const std::vector<torch::Tensor>& inputs) const;

    const onnx::Graph& graph() const { return graph_; }

    // The operators this runner knows, sorted.
    static std::vector<std::string> operators();

  private:
    void find_silu();

    onnx::Graph graph_;  // nodes, inputs and outputs; the initializers are in constants_
    std::int64_t opset_;
    torch::Device device_;
    std::string where_;
    std::unordered_map<std::string, torch::Tensor> constants_;
    // SiLU written as Mul(x, Sigmoid(x)) (how exporters spell it) runs as one torch::silu: the
    // Sigmoid is skipped when that Mul is its only reader. Parallel to graph_.nodes.
    enum class Fusion : char { None, SkippedSigmoid, Silu };
    std::vector<Fusion> fusion_;
    std::vector<std::size_t> silu_input_;  // for a Silu node: which input is x
};

}  // namespace crucible::engine
