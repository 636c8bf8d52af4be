// Crucible's ONNX runner, operator by operator, on graphs built here with values worked by hand
// from the ONNX specification. The whole exported detector is compared with ONNX Runtime in
// tests/detect/export.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/engine/onnx_runner.h"
#include "core/engine/onnx_torch.h"

namespace crucible::engine {
namespace {

using onnx::Attribute;

// One node `op` reading `x` (a graph input) and the constants, writing "y".
onnx::Model one_node(const std::string& op, const torch::Tensor& x,
                     std::vector<onnx::Tensor> constants, std::vector<Attribute> attributes = {},
                     std::int64_t opset = 17) {
    onnx::Model m;
    m.opset = opset;
    onnx::Node n{op, {"x"}, {"y"}, "the_" + op, std::move(attributes)};
    for (const auto& c : constants)
        n.inputs.push_back(c.name);
    m.graph.nodes = {n};
    m.graph.initializers = std::move(constants);
    const auto type = x.scalar_type() == torch::kLong   ? onnx::DataType::Int64
                      : x.scalar_type() == torch::kHalf ? onnx::DataType::Float16
                                                        : onnx::DataType::Float;
    m.graph.inputs = {{"x", type, {}}};
    m.graph.outputs = {{"y", type, {}}};
    return m;
}

torch::Tensor run_one(const std::string& op, const torch::Tensor& x,
                      std::vector<onnx::Tensor> constants, std::vector<Attribute> attributes = {},
                      std::int64_t opset = 17) {
    const auto m = one_node(op, x, std::move(constants), std::move(attributes), opset);
    return OnnxRunner(m, torch::kCPU, "test.onnx").run({x}).at(0);
}

torch::Tensor longs(std::vector<std::int64_t> v) {
    return torch::tensor(v, torch::kLong);
}

TEST(OnnxRunner, SliceClampsNegativeIndicesAndStepsBackwards) {
    const auto x = torch::arange(10, torch::kFloat);
    // starts -3, ends huge: the last three; then a backward step from the end.
    auto y = run_one("Slice", x,
                     {onnx::int64_tensor("s", {-3}), onnx::int64_tensor("e", {1LL << 62}),
                      onnx::int64_tensor("a", {0})});
    EXPECT_TRUE(torch::equal(y, torch::tensor({7.f, 8.f, 9.f})));
    y = run_one("Slice", x,
                {onnx::int64_tensor("s", {-1}), onnx::int64_tensor("e", {-(1LL << 62)}),
                 onnx::int64_tensor("a", {0}), onnx::int64_tensor("p", {-3})});
    EXPECT_TRUE(torch::equal(y, torch::tensor({9.f, 6.f, 3.f, 0.f})));
}

TEST(OnnxRunner, GatherTakesNegativeIndicesAndKeepsTheirShape) {
    const auto x = torch::arange(12, torch::kFloat).reshape({3, 4});
    const auto y = run_one("Gather", x, {onnx::int64_tensor("i", {-1, 0}, {1, 2})},
                           {{"axis", std::int64_t{1}}});
    ASSERT_EQ(y.sizes(), (std::vector<std::int64_t>{3, 1, 2}));
    EXPECT_TRUE(
        torch::equal(y.reshape({3, 2}), torch::tensor({{3.f, 0.f}, {7.f, 4.f}, {11.f, 8.f}})));
}

TEST(OnnxRunner, ReshapeCopiesZerosAndExpandBroadcastsBothWays) {
    const auto x = torch::arange(6, torch::kFloat).reshape({2, 3});
    EXPECT_EQ(run_one("Reshape", x, {onnx::int64_tensor("s", {0, -1, 1})}).sizes(),
              (std::vector<std::int64_t>{2, 3, 1}));
    // [2, 3] with shape [4, 1, 1]: dims of 1 in the shape keep the input's (bidirectional).
    const auto y = run_one("Expand", x, {onnx::int64_tensor("s", {4, 1, 1})});
    ASSERT_EQ(y.sizes(), (std::vector<std::int64_t>{4, 2, 3}));
    EXPECT_TRUE(torch::equal(y[3], x));
}

TEST(OnnxRunner, ResizeNearestAsymmetricFloorIsLibTorchsNearest) {
    const auto x = torch::rand({1, 2, 3, 5});
    const auto y = run_one(
        "Resize", x, {onnx::float_tensor("roi", {}, {0}), onnx::float_tensor("sc", {1, 1, 2, 2})},
        {{"mode", std::string("nearest")},
         {"coordinate_transformation_mode", std::string("asymmetric")},
         {"nearest_mode", std::string("floor")}});
    const auto expected = torch::upsample_nearest2d(x, std::vector<std::int64_t>{6, 10});
    EXPECT_TRUE(torch::equal(y, expected));
    // half_pixel with round_prefer_floor (the operator's defaults), 4 -> 6: source (o + 0.5) / 1.5
    // - 0.5 = -0.17, 0.5, 1.17, 1.83, 2.5, 3.17; halves round down.
    const auto row = torch::tensor({{{{0.f, 1.f, 2.f, 3.f}}}});
    const auto z = run_one("Resize", row,
                           {onnx::float_tensor("roi", {}, {0}), onnx::float_tensor("sc", {}, {0}),
                            onnx::int64_tensor("sz", {1, 1, 1, 6})});
    EXPECT_TRUE(torch::equal(z.flatten(), torch::tensor({0.f, 0.f, 1.f, 2.f, 2.f, 3.f}))) << z;
}

TEST(OnnxRunner, SoftmaxBeforeOpset13FlattensAtTheAxis) {
    const auto x = torch::rand({2, 3, 4});
    const auto old = run_one("Softmax", x, {}, {{"axis", std::int64_t{1}}}, 11);
    EXPECT_TRUE(torch::allclose(old, torch::softmax(x.reshape({2, 12}), 1).reshape({2, 3, 4})));
    const auto now = run_one("Softmax", x, {}, {{"axis", std::int64_t{1}}}, 13);
    EXPECT_TRUE(torch::allclose(now, torch::softmax(x, 1)));
}

TEST(OnnxRunner, IntegerDivisionTruncatesAndUnsqueezeSortsItsAxes) {
    const auto x = longs({7, -7});
    EXPECT_TRUE(torch::equal(run_one("Div", x, {onnx::int64_tensor("d", {2})}), longs({3, -3})));
    const auto y = run_one("Unsqueeze", torch::zeros({3}), {onnx::int64_tensor("a", {2, 0})});
    EXPECT_EQ(y.sizes(), (std::vector<std::int64_t>{1, 3, 1}));
}

TEST(OnnxRunner, GatherNdPicksWholeRowsAndShapeTakesARange) {
    const auto x = torch::arange(24, torch::kFloat).reshape({2, 3, 4});
    const auto y = run_one("GatherND", x, {onnx::int64_tensor("i", {1, 2, 0, -3}, {2, 2})});
    ASSERT_EQ(y.sizes(), (std::vector<std::int64_t>{2, 4}));
    EXPECT_TRUE(torch::equal(y[0], x[1][2]));
    EXPECT_TRUE(torch::equal(y[1], x[0][0]));
    const auto s = run_one("Shape", x, {}, {{"start", std::int64_t{1}}, {"end", std::int64_t{-1}}});
    EXPECT_TRUE(torch::equal(s, longs({3})));
}

// Boxes (cx, cy, w, h): 0 and 1 overlap with IoU 0.6, 2 lies apart, 3 scores at the threshold.
TEST(OnnxRunner, NonMaxSuppressionWorkedByHand) {
    onnx::Model m;
    m.graph.nodes = {{"NonMaxSuppression",
                      {"boxes", "scores", "max", "iou", "conf"},
                      {"y"},
                      "nms",
                      {{"center_point_box", std::int64_t{1}}}}};
    m.graph.initializers = {onnx::int64_tensor("max", {10}), onnx::float_tensor("iou", {0.5f}),
                            onnx::float_tensor("conf", {0.3f})};
    m.graph.inputs = {{"boxes", onnx::DataType::Float, {}}, {"scores", onnx::DataType::Float, {}}};
    m.graph.outputs = {{"y", onnx::DataType::Int64, {}}};
    // Box 1 is box 0 moved right by a quarter: intersection 0.75, union 1.25, IoU 0.6.
    const auto boxes = torch::tensor({{{0.5f, 0.5f, 1.f, 1.f},
                                       {0.75f, 0.5f, 1.f, 1.f},
                                       {5.f, 5.f, 1.f, 1.f},
                                       {9.f, 9.f, 1.f, 1.f}}});
    // Class 0: 1 beats 0 (suppressed), 2 kept, 3 at the threshold (not above it) dropped.
    // Class 1: 0 alone above the threshold.
    const auto scores = torch::tensor({{{0.8f, 0.9f, 0.4f, 0.3f}, {0.7f, 0.1f, 0.2f, 0.f}}});
    OnnxRunner runner(m, torch::kCPU, "nms.onnx");
    auto y = runner.run({boxes, scores}).at(0);
    EXPECT_TRUE(torch::equal(y, torch::tensor({{0, 0, 1}, {0, 0, 2}, {0, 1, 0}}, torch::kLong)))
        << y;
    // An IoU threshold above 0.6 keeps both overlapping boxes, best first.
    m.graph.initializers[1] = onnx::float_tensor("iou", {0.65f});
    y = OnnxRunner(m, torch::kCPU, "nms.onnx").run({boxes, scores}).at(0);
    EXPECT_TRUE(torch::equal(y.narrow(0, 0, 3).select(1, 2), longs({1, 0, 2}))) << y;
    // At most one box per class.
    m.graph.initializers[0] = onnx::int64_tensor("max", {1});
    y = OnnxRunner(m, torch::kCPU, "nms.onnx").run({boxes, scores}).at(0);
    EXPECT_TRUE(torch::equal(y, torch::tensor({{0, 0, 1}, {0, 1, 0}}, torch::kLong))) << y;
}

// Mul(x, Sigmoid(x)) runs as one SiLU; a Sigmoid read elsewhere too still gives its own value.
TEST(OnnxRunner, SiluSpelledAsMulOfSigmoidGivesTheSameValues) {
    onnx::Model m;
    m.graph.nodes = {{"Sigmoid", {"x"}, {"s"}, "sig", {}},
                     {"Mul", {"s", "x"}, {"y"}, "silu", {}},
                     {"Sigmoid", {"y"}, {"t"}, "sig2", {}},
                     {"Mul", {"y", "t"}, {"z"}, "silu2", {}},
                     {"Add", {"z", "t"}, {"w"}, "reads_t_again", {}}};
    m.graph.inputs = {{"x", onnx::DataType::Float, {}}};
    m.graph.outputs = {{"y", onnx::DataType::Float, {}}, {"w", onnx::DataType::Float, {}}};
    const auto x = torch::randn({2, 3, 4, 4});
    const auto out = OnnxRunner(m, torch::kCPU, "silu.onnx").run({x});
    const auto y = x * torch::sigmoid(x);
    EXPECT_TRUE(torch::allclose(out[0], y, 1e-6, 1e-6));
    EXPECT_TRUE(torch::allclose(out[1], y * torch::sigmoid(y) + torch::sigmoid(y), 1e-6, 1e-6));
}

TEST(OnnxRunner, HalfGraphsComputeInHalf) {
    const auto x = torch::rand({1, 2, 4, 4}).to(torch::kHalf);
    const auto w = torch::rand({3, 2, 1, 1});
    const auto y = run_one("Conv", x, {onnx_tensor_from("w", w, onnx::DataType::Float16)});
    EXPECT_EQ(y.scalar_type(), torch::kHalf);
    EXPECT_TRUE(torch::allclose(
        y.to(torch::kFloat),
        torch::conv2d(x.to(torch::kFloat), w.to(torch::kHalf).to(torch::kFloat)), 1e-2, 1e-2));
}

TEST(OnnxRunner, RefusesWhatItCannotRunNamingTheNode) {
    const auto x = torch::zeros({2});
    const auto message = [&](const onnx::Model& m) -> std::string {
        try {
            OnnxRunner(m, torch::kCPU, "model.onnx").run({x});
        } catch (const InputError& e) {
            return e.what();
        }
        return "no error";
    };
    // An operator it does not know: refused when built, before anything runs.
    auto m = one_node("LSTM", x, {});
    EXPECT_NE(message(m).find("model.onnx: node 'the_LSTM' uses LSTM"), std::string::npos)
        << message(m);
    // A value nothing makes.
    m = one_node("Add", x, {});
    m.graph.nodes[0].inputs.push_back("ghost");
    EXPECT_NE(message(m).find("reads 'ghost'"), std::string::npos) << message(m);
    // LibTorch's own complaint (shapes that do not broadcast) comes back naming the node.
    m = one_node("Add", x, {onnx::float_tensor("c", {1, 2, 3})});
    EXPECT_NE(message(m).find("node 'the_Add' (Add)"), std::string::npos) << message(m);
    // Attribute values it does not cover.
    m = one_node("Resize", torch::zeros({1, 1, 2, 2}),
                 {onnx::float_tensor("roi", {}, {0}), onnx::float_tensor("sc", {1, 1, 2, 2})},
                 {{"mode", std::string("cubic")}});
    try {
        OnnxRunner(m, torch::kCPU, "model.onnx").run({torch::zeros({1, 1, 2, 2})});
        ADD_FAILURE() << "cubic Resize ran";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("only mode=nearest"), std::string::npos) << e.what();
    }
    // An input of the wrong type, and the wrong count of inputs.
    m = one_node("Identity", x, {});
    EXPECT_THROW(OnnxRunner(m, torch::kCPU, "m").run({longs({1, 2})}), InputError);
    EXPECT_THROW(OnnxRunner(m, torch::kCPU, "m").run({}), InputError);
    // An opset outside 11 to 21.
    m.opset = 9;
    EXPECT_THROW(OnnxRunner(m, torch::kCPU, "m"), InputError);
}

// A file is hostile input: results it would make too large, and values that make no sense, are
// refused naming the node instead of exhausting memory or crashing.
TEST(OnnxRunner, HostileGraphsAreRefusedNamingTheNode) {
    const auto refusal = [](const std::string& op, const torch::Tensor& x,
                            std::vector<onnx::Tensor> constants,
                            std::vector<Attribute> attributes = {}) -> std::string {
        try {
            run_one(op, x, std::move(constants), std::move(attributes));
        } catch (const InputError& e) {
            return e.what();
        }
        return "no error";
    };
    const auto one_float = torch::ones({1});
    struct Case {
        std::string what, message;
    };
    const std::vector<Case> cases = {
        {refusal("Range", torch::zeros({}),
                 {onnx::float_tensor("l", {1e12f}, {}), onnx::float_tensor("d", {1}, {})}),
         "more than Crucible runs"},
        {refusal("Range", torch::zeros({}),
                 {onnx::float_tensor("l", {1}, {}), onnx::float_tensor("d", {0}, {})}),
         "delta not 0"},
        {refusal("Range", torch::zeros({}),
                 {onnx::float_tensor("l", {std::numeric_limits<float>::infinity()}, {}),
                  onnx::float_tensor("d", {1}, {})}),
         "finite"},
        {refusal("Expand", one_float, {onnx::int64_tensor("s", {1 << 20, 1 << 20})}),
         "more than Crucible runs"},
        {refusal("Expand", one_float, {onnx::int64_tensor("s", {-4})}), "negative"},
        {refusal(
             "Resize", torch::zeros({1, 1, 2, 2}),
             {onnx::float_tensor("roi", {}, {0}), onnx::float_tensor("sc", {1, 1, 1e9f, 1e9f})}),
         "more than Crucible runs"},
        {refusal("Resize", torch::zeros({1, 1, 2, 2}),
                 {onnx::float_tensor("roi", {}, {0}), onnx::float_tensor("sc", {1, 1, -2, 2})}),
         "scales"},
        {refusal("Resize", torch::zeros({1, 1, 2, 2}),
                 {onnx::float_tensor("roi", {}, {0}), onnx::float_tensor("sc", {1, 1, 1e30f, 1})}),
         "scales"},
        {refusal("Resize", torch::zeros({1, 1, 2, 2}),
                 {onnx::float_tensor("roi", {}, {0}), onnx::float_tensor("sc", {}, {0}),
                  onnx::int64_tensor("sz", {1, 1, -3, 4})}),
         "negative"},
        {refusal("Gather", torch::zeros({3}), {onnx::int64_tensor("i", {7})}), "the_Gather"},
        {refusal("Reshape", torch::zeros({6}), {onnx::int64_tensor("s", {4, -1})}), "the_Reshape"},
        {refusal("Slice", torch::zeros({6}),
                 {onnx::int64_tensor("s", {0}), onnx::int64_tensor("e", {2}),
                  onnx::int64_tensor("a", {0}), onnx::int64_tensor("p", {0})}),
         "step is 0"},
        {refusal("Concat", torch::zeros({2}), {}, {{"axis", std::int64_t{5}}}), "axis 5"},
        {refusal("Conv", torch::zeros({2}), {onnx::float_tensor("w", {1}, {1, 1, 1, 1})}), "2-D"},
        {refusal("Cast", one_float, {}, {{"to", std::int64_t{11}}}), "type 11"},
        {refusal("Transpose", torch::zeros({2, 2}), {}, {{"perm", std::vector<std::int64_t>{0}}}),
         "perm"},
        {refusal("Softmax", one_float, {}, {{"axis", std::string("one")}}), "wrong type"},
    };
    for (const auto& c : cases) {
        EXPECT_NE(c.what.find("test.onnx: node"), std::string::npos) << c.what;
        EXPECT_NE(c.what.find(c.message), std::string::npos) << c.what;
    }
}

}  // namespace
}  // namespace crucible::engine
