#include "plugins/detect/metrics/prediction_folder.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <system_error>

#include "core/base/error.h"
#include "core/base/file_io.h"
#include "core/data/formats/yolo_labels.h"
#include "plugins/detect/metrics/metrics_report.h"

namespace crucible::detect {
namespace {

namespace fs = std::filesystem;

constexpr double kCoordTolerance = 1e-6;  // text rounding of values written as exactly 0 or 1
constexpr std::size_t kMaxListedProblems = 20;

// Calls fn(line_number, line) for every line; strips a UTF-8 BOM.
template <typename Fn>
void for_each_line(std::string_view text, Fn&& fn) {
    if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
    int line_no = 0;
    std::size_t pos = 0;
    while (pos <= text.size()) {
        std::size_t end = text.find('\n', pos);
        if (end == std::string_view::npos) end = text.size();
        ++line_no;
        fn(line_no, text.substr(pos, end - pos));
        if (end == text.size()) break;
        pos = end + 1;
    }
}

// A finite decimal number ("0.5", "+1", "1e-3"); false for anything else (nan, inf, junk).
bool parse_number(std::string_view token, double& value) {
    return data::parse_label_number(token, value) && std::isfinite(value);
}

// Printable form of a token for messages (bytes outside ASCII shown as \xNN, long tokens cut).
std::string quote(std::string_view token) {
    std::string out = "'";
    for (std::size_t i = 0; i < token.size() && i < 40; ++i) {
        const auto c = static_cast<unsigned char>(token[i]);
        if (c >= 0x20 && c < 0x7f) {
            out += static_cast<char>(c);
        } else {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02X", c);
            out += buf;
        }
    }
    if (token.size() > 40) out += "...";
    return out + "'";
}

// Class id: a whole, non-negative number ("3", also "3.0" as some writers print it).
bool parse_class(std::string_view token, int class_count, int& cls, std::string& problem) {
    double v = 0;
    if (!parse_number(token, v)) {
        problem = "class id " + quote(token) + " is not a number";
        return false;
    }
    if (v < 0) {
        problem = "class id is negative";
        return false;
    }
    if (v != std::floor(v) || v > 1e6) {
        problem = "class id " + quote(token) + " is not a whole number below 1000000";
        return false;
    }
    cls = static_cast<int>(v);
    if (class_count > 0 && cls >= class_count) {
        problem = "class id " + std::to_string(cls) + " is not below the class count " +
                  std::to_string(class_count);
        return false;
    }
    return true;
}

bool parse_values(const std::vector<std::string_view>& tokens, std::size_t from,
                  std::vector<double>& values, std::string& problem) {
    values.clear();
    for (std::size_t i = from; i < tokens.size(); ++i) {
        double v = 0;
        if (!parse_number(tokens[i], v)) {
            problem = quote(tokens[i]) + " is not a number";
            return false;
        }
        values.push_back(v);
    }
    return true;
}

bool in_unit(double v) {
    return v >= -kCoordTolerance && v <= 1 + kCoordTolerance;
}

[[noreturn]] void throw_problems(const std::vector<TextProblem>& problems) {
    std::string what = problems.front().what;
    if (problems.size() > 1) {
        what += "\n(" + std::to_string(problems.size()) + " bad lines in all)";
        for (std::size_t i = 1; i < problems.size() && i < kMaxListedProblems; ++i)
            what += "\n  " + problems[i].where + ": " + problems[i].what;
        if (problems.size() > kMaxListedProblems)
            what += "\n  ... and " + std::to_string(problems.size() - kMaxListedProblems) + " more";
    }
    throw InputError(problems.front().where, what);
}

std::vector<fs::path> txt_files(const fs::path& dir) {
    std::error_code ec;
    std::vector<fs::path> out;
    fs::directory_iterator it(dir, ec);
    if (ec) throw InputError(path_to_utf8(dir), "cannot list folder: " + ec.message());
    for (const auto& entry : it) {
        std::error_code fec;
        if (!entry.is_regular_file(fec)) continue;
        if (entry.path().extension() == ".txt") out.push_back(entry.path());
    }
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace

std::vector<NormalizedPrediction> parse_prediction_text(std::string_view text,
                                                        const std::string& where_file,
                                                        int class_count,
                                                        std::vector<TextProblem>& problems) {
    std::vector<NormalizedPrediction> out;
    std::vector<double> values;
    for_each_line(text, [&](int line_no, std::string_view line) {
        const auto tokens = data::split_label_tokens(line);
        if (tokens.empty()) return;
        const std::string where = where_file + ":" + std::to_string(line_no);
        auto bad = [&](const std::string& what) { problems.push_back({where, what}); };
        if (tokens.size() != 6) {
            bad("expected 6 values (class cx cy w h conf), found " + std::to_string(tokens.size()));
            return;
        }
        NormalizedPrediction p;
        std::string problem;
        if (!parse_class(tokens[0], class_count, p.cls, problem)) return bad(problem);
        if (!parse_values(tokens, 1, values, problem)) return bad(problem);
        p.cx = values[0];
        p.cy = values[1];
        p.w = values[2];
        p.h = values[3];
        if (p.w < 0 || p.h < 0) return bad("box width and height must not be negative");
        if (!in_unit(p.cx) || !in_unit(p.cy) || !in_unit(p.w) || !in_unit(p.h))
            return bad("coordinate outside [0, 1] (predictions are normalized by the image size)");
        if (!in_unit(values[4])) return bad("confidence outside [0, 1]");
        p.conf = static_cast<float>(values[4]);
        out.push_back(p);
    });
    return out;
}

std::vector<data::Box> parse_label_text(std::string_view text, const std::string& where_file,
                                        int class_count, std::vector<TextProblem>& problems) {
    std::vector<data::Box> out;
    std::vector<double> values;
    for_each_line(text, [&](int line_no, std::string_view line) {
        const auto tokens = data::split_label_tokens(line);
        if (tokens.empty()) return;
        const std::string where = where_file + ":" + std::to_string(line_no);
        auto bad = [&](const std::string& what) { problems.push_back({where, what}); };
        const std::size_t n = tokens.size();
        if (n != 5 && (n < 7 || n % 2 == 0)) {
            bad("expected 5 values (class cx cy w h) or a polygon (class x1 y1 x2 y2 ...), found " +
                std::to_string(n));
            return;
        }
        data::Box box;
        std::string problem;
        if (!parse_class(tokens[0], class_count, box.cls, problem)) return bad(problem);
        if (!parse_values(tokens, 1, values, problem)) return bad(problem);
        if (n == 5) {
            box.cx = values[0];
            box.cy = values[1];
            box.w = values[2];
            box.h = values[3];
        } else {
            double x1 = values[0], x2 = values[0], y1 = values[1], y2 = values[1];
            for (std::size_t i = 0; i + 1 < values.size(); i += 2) {
                x1 = std::min(x1, values[i]);
                x2 = std::max(x2, values[i]);
                y1 = std::min(y1, values[i + 1]);
                y2 = std::max(y2, values[i + 1]);
            }
            for (double v : values)
                if (!in_unit(v)) return bad("coordinate outside [0, 1]");
            box.cx = (x1 + x2) / 2;
            box.cy = (y1 + y2) / 2;
            box.w = x2 - x1;
            box.h = y2 - y1;
        }
        if (const std::string p = data::box_problem(box, class_count); !p.empty()) return bad(p);
        out.push_back(box);
    });
    return out;
}

data::DetectionDataset load_label_folder(const fs::path& dir) {
    const std::string where_dir = path_to_utf8(dir);
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) throw InputError(where_dir, "is not a folder");
    data::DetectionDataset ds;
    ds.root = dir;
    const auto files = txt_files(dir);
    std::vector<TextProblem> problems;
    for (const auto& f : files) {
        if (f.filename() != "classes.txt") continue;
        const std::string text = read_file_bytes_limited(f, 1 << 20);
        for_each_line(text, [&](int, std::string_view line) {
            const auto tokens = data::split_label_tokens(line);
            std::string name;
            // A name may hold spaces: keep the line, trimmed.
            if (!tokens.empty())
                name = std::string(line.substr(
                    static_cast<std::size_t>(tokens.front().data() - line.data()),
                    static_cast<std::size_t>(tokens.back().data() + tokens.back().size() -
                                             tokens.front().data())));
            ds.class_names.push_back(name);
        });
        while (!ds.class_names.empty() && ds.class_names.back().empty())
            ds.class_names.pop_back();
    }
    const int class_count = static_cast<int>(ds.class_names.size());
    for (const auto& f : files) {
        if (f.filename() == "classes.txt") continue;
        const std::string text = read_file_bytes_limited(f, 64ull << 20);
        data::ImageRecord rec;
        rec.path = f.filename();
        rec.boxes = parse_label_text(text, path_to_utf8(f), class_count, problems);
        ds.images.push_back(std::move(rec));
    }
    if (!problems.empty()) throw_problems(problems);
    return ds;
}

PredictionFolderResult evaluate_prediction_folder(const data::DetectionDataset& dataset,
                                                  const fs::path& predictions_dir,
                                                  const PredictionFolderOptions& options) {
    PredictionFolderResult result;
    result.class_names = dataset.class_names;
    std::error_code ec;
    if (!fs::is_directory(predictions_dir, ec))
        throw InputError(path_to_utf8(predictions_dir), "is not a folder");
    if (options.imgsz <= 0) throw InputError("imgsz", "must be a positive number of pixels");
    fs::path dir = predictions_dir;
    auto files = txt_files(dir);
    if (files.empty() && fs::is_directory(dir / "labels", ec)) {
        dir = dir / "labels";
        files = txt_files(dir);
    }
    result.predictions_dir = dir;

    // Images by stem (prediction files are named by the image's stem).
    std::vector<const data::ImageRecord*> images;
    std::map<std::string, std::size_t> by_stem;
    for (const auto& rec : dataset.images) {
        if (!options.split.empty() && rec.split != options.split) continue;
        const std::string stem = path_to_utf8(rec.path.stem());
        auto [it, fresh] = by_stem.emplace(stem, images.size());
        if (!fresh)
            throw InputError(path_to_utf8(rec.path),
                             "shares the name '" + stem + "' with " +
                                 path_to_utf8(images[it->second]->path) +
                                 "; prediction files are named by the image name, so these two "
                                 "cannot be told apart");
        images.push_back(&rec);
    }

    const int class_count = static_cast<int>(dataset.class_names.size());
    std::vector<std::vector<NormalizedPrediction>> preds(images.size());
    std::vector<TextProblem> problems;
    for (const auto& f : files) {
        const std::string stem = path_to_utf8(f.stem());
        auto it = by_stem.find(stem);
        if (it == by_stem.end()) {
            result.unmatched_files.push_back(path_to_utf8(f.filename()));
            continue;
        }
        const std::string text = read_file_bytes_limited(f, options.max_file_bytes);
        preds[it->second] = parse_prediction_text(text, path_to_utf8(f), class_count, problems);
        ++result.prediction_files;
        result.predictions += static_cast<long long>(preds[it->second].size());
    }
    if (!problems.empty()) throw_problems(problems);

    int nc = class_count;
    for (std::size_t i = 0; i < images.size(); ++i) {
        for (const auto& b : images[i]->boxes)
            nc = std::max(nc, b.cls + 1);
        for (const auto& p : preds[i])
            nc = std::max(nc, p.cls + 1);
    }
    result.confusion = ConfusionMatrix(nc, options.confusion_conf, options.confusion_iou);

    DetectionStats stats;
    for (std::size_t i = 0; i < images.size(); ++i) {
        const auto& rec = *images[i];
        const double W = rec.width > 0 ? rec.width : options.imgsz;
        const double H = rec.height > 0 ? rec.height : options.imgsz;
        std::vector<GtBox> gt;
        gt.reserve(rec.boxes.size());
        for (const auto& b : rec.boxes)
            gt.push_back({b.cls, (b.cx - b.w / 2) * W, (b.cy - b.h / 2) * H, (b.cx + b.w / 2) * W,
                          (b.cy + b.h / 2) * H});
        std::vector<PredBox> pb;
        pb.reserve(preds[i].size());
        for (const auto& p : preds[i])
            pb.push_back({(p.cx - p.w / 2) * W, (p.cy - p.h / 2) * H, (p.cx + p.w / 2) * W,
                          (p.cy + p.h / 2) * H, p.conf, p.cls});
        result.confusion.add_image(gt, pb);
        stats.add_image(gt, std::move(pb), rec.tags);
    }
    result.metrics = stats.compute();
    if (!options.tag_key.empty()) result.by_tag = stats.compute_by_tag(options.tag_key);
    return result;
}

Json prediction_folder_json(const PredictionFolderResult& result, const std::string& tag_key) {
    Json out = validation_json(
        {result.metrics, result.confusion, result.class_names, tag_key, result.by_tag}, false);
    out["prediction_files"] = result.prediction_files;
    out["predictions"] = result.predictions;
    out["unmatched_prediction_files"] = result.unmatched_files;
    return out;
}

}  // namespace crucible::detect
