#include "ui/predictor.h"

#include <QTemporaryDir>

#include "core/base/file_io.h"
#include "core/data/formats/yolo_labels.h"

namespace crucible::ui {

namespace fs = std::filesystem;

std::vector<Detection> parse_detections(const std::string& text) {
    std::vector<Detection> out;
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        const auto tokens =
            data::split_label_tokens(std::string_view(text).substr(start, end - start));
        start = end + 1;
        if (tokens.size() != 6) continue;
        double v[6];
        bool ok = true;
        for (int i = 0; i < 6 && ok; ++i)
            ok = data::parse_label_number(tokens[static_cast<std::size_t>(i)], v[i]);
        if (!ok || v[0] < 0 || v[0] != static_cast<int>(v[0])) continue;
        out.push_back({static_cast<int>(v[0]), v[1], v[2], v[3], v[4], v[5]});
    }
    return out;
}

void stage_images(const std::vector<fs::path>& images, const fs::path& folder) {
    fs::create_directories(folder);
    for (std::size_t i = 0; i < images.size(); ++i) {
        fs::path name = path_from_utf8(std::to_string(i) + "_");
        name += images[i].filename();
        std::error_code ec;
        fs::create_hard_link(images[i], folder / name, ec);
        if (ec) fs::copy_file(images[i], folder / name, fs::copy_options::overwrite_existing);
    }
}

fs::path staged_label_name(std::size_t i, const fs::path& image) {
    fs::path file = path_from_utf8(std::to_string(i) + "_");
    file += image.stem();
    file += ".txt";
    return file;
}

Predictor::Predictor(std::vector<fs::path> images, QObject* parent)
    : QObject(parent), images_(std::move(images)) {}

Predictor::~Predictor() = default;

bool Predictor::stage() {
    work_ = std::make_unique<QTemporaryDir>();
    if (!work_->isValid()) {
        fail(tr("no temporary folder to predict in"));
        return false;
    }
    try {
        stage_images(images_, staged_folder());
    } catch (const std::exception& e) {
        fail(QString::fromUtf8(e.what()));
        return false;
    }
    return true;
}

fs::path Predictor::work_folder() const {
    return work_ ? path_from_utf8(work_->path().toStdString()) : fs::path();
}

Json Predictor::command_options(const fs::path& model) const {
    return {{"source", path_to_utf8(staged_folder())},
            {"model", path_to_utf8(model)},
            {"conf", kLowestConfidence},
            {"save", false},
            {"save_txt", true},
            {"name", kOutputName},
            {"exist_ok", true}};
}

void Predictor::fail(const QString& message) {
    if (finished_) return;
    finished_ = true;
    error_ = message;
    emit done(false);
}

void Predictor::succeed() {
    if (finished_) return;
    finished_ = true;
    emit done(true);
}

void Predictor::read_labels(const fs::path& labels) {
    detections_.assign(images_.size(), {});
    for (std::size_t i = 0; i < images_.size(); ++i) {
        const auto file = labels / staged_label_name(i, images_[i]);
        std::error_code ec;
        if (fs::exists(file, ec)) detections_[i] = parse_detections(read_file_bytes(file));
    }
}

}  // namespace crucible::ui
