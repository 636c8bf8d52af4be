#include "core/data/draw_boxes.h"

#include <algorithm>
#include <cmath>

#include <opencv2/imgproc.hpp>

namespace crucible::data {

cv::Scalar class_colour(int cls) {
    static const cv::Scalar palette[] = {{56, 56, 255},  {151, 157, 255}, {31, 112, 255},
                                         {29, 178, 255}, {49, 210, 207},  {10, 249, 72},
                                         {23, 204, 146}, {134, 219, 61},  {211, 188, 0},
                                         {209, 106, 0},  {255, 56, 132},  {203, 56, 255}};
    const std::size_t n = sizeof palette / sizeof palette[0];
    return palette[static_cast<std::size_t>(std::max(cls, 0)) % n];
}

void draw_labeled_box(cv::Mat& image, const PixelBox& box, const std::string& label) {
    const int side = std::max(image.cols, image.rows);
    const double font = std::max(0.35, side / 1300.0);
    const int thick = std::max(1, side / 320);
    const cv::Scalar c = class_colour(box.cls);
    const cv::Point p1(static_cast<int>(std::lround(box.x1)),
                       static_cast<int>(std::lround(box.y1)));
    const cv::Point p2(static_cast<int>(std::lround(box.x2)) - 1,
                       static_cast<int>(std::lround(box.y2)) - 1);
    cv::rectangle(image, p1, p2, c, thick, cv::LINE_AA);
    if (label.empty()) return;
    int base = 0;
    const cv::Size ts = cv::getTextSize(label, cv::FONT_HERSHEY_SIMPLEX, font, 1, &base);
    const int ty = std::max(ts.height + 2, p1.y);
    cv::rectangle(image, cv::Point(p1.x, ty - ts.height - 2), cv::Point(p1.x + ts.width + 2, ty), c,
                  cv::FILLED);
    cv::putText(image, label, cv::Point(p1.x + 1, ty - 2), cv::FONT_HERSHEY_SIMPLEX, font,
                cv::Scalar(255, 255, 255), 1, cv::LINE_AA);
}

}  // namespace crucible::data
