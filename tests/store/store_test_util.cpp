#include "tests/store/store_test_util.h"

#include <fstream>
#include <random>

#include "core/base/file_io.h"
#include "core/base/sha256.h"

namespace crucible::store::test {

namespace fs = std::filesystem;

void write_random_file(const fs::path& path, std::size_t size, std::uint64_t seed) {
    fs::create_directories(path.parent_path());
    std::string bytes(size, '\0');
    std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ULL + 1);
    for (std::size_t i = 0; i < size; i += 8) {
        std::uint64_t v = rng();
        for (std::size_t k = 0; k < 8 && i + k < size; ++k)
            bytes[i + k] = static_cast<char>((v >> (8 * k)) & 0xff);
    }
    std::ofstream out(path, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

data::DetectionDataset make_dataset(const fs::path& root, std::size_t images,
                                    std::size_t image_bytes, const std::string& name_prefix) {
    data::DetectionDataset ds;
    ds.root = root;
    ds.class_names = {"person", "car", "dog"};
    for (std::size_t i = 0; i < images; ++i) {
        data::ImageRecord img;
        img.split = (i % 5 == 4) ? "val" : "train";
        img.path = fs::path("images") / img.split /
                   path_from_utf8(name_prefix + std::to_string(i) + ".jpg");
        write_random_file(root / img.path, image_bytes, i + 1);
        img.width = 640;
        img.height = 480;
        for (std::size_t b = 0; b < 1 + i % 3; ++b)
            img.boxes.push_back(
                {static_cast<int>((i + b) % 3), 0.2 + 0.1 * static_cast<double>(b), 0.5, 0.1, 0.2});
        if (i % 7 == 0) img.tags["station"] = std::to_string(i % 4);
        ds.images.push_back(std::move(img));
    }
    return ds;
}

std::string message_of(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const std::exception& e) {
        return e.what();
    }
    return "<no exception>";
}

}  // namespace crucible::store::test
