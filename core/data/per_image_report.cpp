#include "core/data/per_image_report.h"

#include <algorithm>

#include "core/base/error.h"
#include "core/base/file_io.h"

namespace crucible::data {

namespace {

const Json& array_field(const Json& object, const std::string& name, const std::string& where) {
    const Json& value = require_field(object, name, where);
    if (!value.is_array())
        throw InputError(where,
                         "field '" + name + "' must be an array, not " + json_type_name(value));
    return value;
}

int whole_number(const Json& value, const std::string& where) {
    if (!value.is_number_integer() || value.get<long long>() < 0 ||
        value.get<long long>() > 1'000'000)
        throw InputError(where, "must be a whole number from 0");
    return static_cast<int>(value.get<long long>());
}

}  // namespace

bool ImageOutcome::counts_in(int predicted, int truth) const {
    return std::find(cells.begin(), cells.end(), std::pair{predicted, truth}) != cells.end();
}

bool ImageOutcome::involves_class(int cls) const {
    return std::any_of(cells.begin(), cells.end(),
                       [cls](const auto& c) { return c.first == cls || c.second == cls; });
}

Json per_image_report_json(const PerImageReport& report) {
    Json images = Json::array();
    for (const auto& im : report.images) {
        Json cells = Json::array(), predictions = Json::array();
        for (const auto& [p, t] : im.cells)
            cells.push_back({p, t});
        for (const auto& s : im.predictions)
            predictions.push_back({s.box.cls, s.box.cx, s.box.cy, s.box.w, s.box.h, s.conf});
        images.push_back({{"path", path_to_utf8(im.path)},
                          {"split", im.split},
                          {"tags", im.tags},
                          {"tp", im.true_positives},
                          {"fp", im.false_positives},
                          {"misses", im.misses},
                          {"mean_iou", im.mean_iou},
                          {"cells", cells},
                          {"predictions", predictions}});
    }
    return {
        {"names", report.names}, {"conf", report.conf}, {"iou", report.iou}, {"images", images}};
}

PerImageReport parse_per_image_report(const Json& json, const std::string& where) {
    if (!json.is_object()) throw InputError(where, "must be a JSON object");
    PerImageReport r;
    for (const auto& n : array_field(json, "names", where)) {
        if (!n.is_string()) throw InputError(where + ".names", "must hold strings");
        r.names.push_back(n.get<std::string>());
    }
    r.conf = get_number(json, "conf", where);
    r.iou = get_number(json, "iou", where);
    const int classes = static_cast<int>(r.names.size());
    const auto& images = array_field(json, "images", where);
    for (std::size_t i = 0; i < images.size(); ++i) {
        const std::string at = where + ".images[" + std::to_string(i) + "]";
        const Json& im = images[i];
        if (!im.is_object()) throw InputError(at, "must be an object");
        ImageOutcome o;
        o.path = path_from_utf8(get_string(im, "path", at));
        o.split = get_string(im, "split", at);
        const Json& tags = require_field(im, "tags", at);
        if (!tags.is_object()) throw InputError(at + ".tags", "must be an object");
        for (const auto& [k, v] : tags.items()) {
            if (!v.is_string()) throw InputError(at + ".tags." + k, "must be a string");
            o.tags[k] = v.get<std::string>();
        }
        o.true_positives = whole_number(require_field(im, "tp", at), at + ".tp");
        o.false_positives = whole_number(require_field(im, "fp", at), at + ".fp");
        o.misses = whole_number(require_field(im, "misses", at), at + ".misses");
        o.mean_iou = get_number(im, "mean_iou", at);
        const auto& cells = array_field(im, "cells", at);
        for (std::size_t c = 0; c < cells.size(); ++c) {
            const std::string cell_at = at + ".cells[" + std::to_string(c) + "]";
            if (!cells[c].is_array() || cells[c].size() != 2)
                throw InputError(cell_at, "must be [predicted, true]");
            const int p = whole_number(cells[c][0], cell_at),
                      t = whole_number(cells[c][1], cell_at);
            if (p > classes || t > classes)
                throw InputError(cell_at, "names a class past the " + std::to_string(classes) +
                                              " classes and the background");
            o.cells.emplace_back(p, t);
        }
        const auto& predictions = array_field(im, "predictions", at);
        for (std::size_t k = 0; k < predictions.size(); ++k) {
            const std::string p_at = at + ".predictions[" + std::to_string(k) + "]";
            const Json& row = predictions[k];
            if (!row.is_array() || row.size() != 6 ||
                !std::all_of(row.begin(), row.end(), [](const Json& v) { return v.is_number(); }))
                throw InputError(p_at, "must be [class, cx, cy, w, h, conf] numbers");
            ScoredBox s;
            s.box.cls = whole_number(row[0], p_at);
            s.box.cx = row[1].get<double>();
            s.box.cy = row[2].get<double>();
            s.box.w = row[3].get<double>();
            s.box.h = row[4].get<double>();
            s.conf = row[5].get<double>();
            o.predictions.push_back(s);
        }
        r.images.push_back(std::move(o));
    }
    return r;
}

}  // namespace crucible::data
