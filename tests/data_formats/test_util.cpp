#include "tests/data_formats/test_util.h"

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <fstream>
#include <vector>

#include "core/base/file_io.h"
#include "core/base/sha256.h"

namespace crucible::data::test {

cv::Mat make_image(int width, int height, int seed) {
    cv::Mat image(height, width, CV_8UC3, cv::Scalar(40 + seed % 50, 90, 160));
    cv::rectangle(image, cv::Point(width / 5, height / 4), cv::Point(width / 2, height / 2),
                  cv::Scalar(200, 30 + seed % 200, 10), -1);
    cv::circle(image, cv::Point(width * 2 / 3, height * 2 / 3), std::max(2, width / 8),
               cv::Scalar(10, 220, 90), -1);
    return image;
}

std::string encoded(const std::string& ext, int width, int height, int seed) {
    std::vector<unsigned char> buffer;
    cv::imencode(ext, make_image(width, height, seed), buffer);
    return std::string(buffer.begin(), buffer.end());
}

void write_bytes(const std::filesystem::path& path, std::string_view bytes) {
    if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), std::streamsize(bytes.size()));
}

std::string read_text(const std::filesystem::path& path) {
    return read_file_bytes(path);
}

}  // namespace crucible::data::test

namespace crucible::data::test {

std::filesystem::path write_yolo_dataset(const std::filesystem::path& dir,
                                         const std::vector<YoloImage>& images,
                                         const std::string& names_yaml) {
    bool val = false;
    for (const auto& im : images) {
        const auto image = dir / "images" / im.split / path_from_utf8(im.name);
        const auto ext = path_to_utf8(image.extension());
        write_bytes(image, encoded(ext, im.width, im.height, int(im.name.size())));
        if (im.labels != "-") {
            auto label = dir / "labels" / im.split / image.filename();
            label.replace_extension(".txt");
            write_bytes(label, im.labels);
        }
        val = val || im.split == "val";
    }
    std::filesystem::create_directories(dir / "images" / "train");
    const auto yaml = dir / "data.yaml";
    write_bytes(yaml, "path: .\ntrain: images/train\n" +
                          std::string(val ? "val: images/val\n" : "") + names_yaml);
    return yaml;
}

}  // namespace crucible::data::test
