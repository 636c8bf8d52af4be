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
            predictions.push_back(
                {s.box.cls, s.box.cx, s.box.cy, s.box.w, s.box.h, s.conf, s.true_at_50 ? 1 : 0});
        images.push_back({{"path", path_to_utf8(im.path)},
                          {"split", im.split},
                          {"tags", im.tags},
                          {"tp", im.true_positives},
                          {"fp", im.false_positives},
                          {"misses", im.misses},
                          {"mean_iou", im.mean_iou},
                          {"cells", cells},
                          {"truth_classes", im.truth_classes},
                          {"predictions", predictions}});
    }
    Json by_tag = Json::object();
    for (const auto& [key, values] : report.by_tag)
        for (const auto& [value, m] : values)
            by_tag[key][value] = {{"images", m.images}, {"instances", m.instances},
                                  {"p", m.p},           {"r", m.r},
                                  {"map50", m.map50},   {"map50_95", m.map50_95}};
    return {{"version", kPerImageReportVersion},
            {"names", report.names},
            {"conf", report.conf},
            {"iou", report.iou},
            {"images", images},
            {"by_tag", by_tag}};
}

PerImageReport parse_per_image_report(const Json& json, const std::string& where) {
    if (!json.is_object()) throw InputError(where, "must be a JSON object");
    PerImageReport r;
    r.version = 1;  // before "version" was written
    if (json.contains("version")) {
        r.version = whole_number(json["version"], where + ".version");
        if (r.version < 2 || r.version > kPerImageReportVersion)
            throw InputError(where + ".version", "is " + std::to_string(r.version) +
                                                     "; this build reads 1 to " +
                                                     std::to_string(kPerImageReportVersion));
    }
    const bool v1 = r.version == 1;
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
        if (!v1)
            for (const auto& c : array_field(im, "truth_classes", at)) {
                const int cls = whole_number(c, at + ".truth_classes");
                if (cls >= classes)
                    throw InputError(at + ".truth_classes", "names class " + std::to_string(cls) +
                                                                " of " + std::to_string(classes));
                o.truth_classes.push_back(cls);
            }
        const auto& predictions = array_field(im, "predictions", at);
        for (std::size_t k = 0; k < predictions.size(); ++k) {
            const std::string p_at = at + ".predictions[" + std::to_string(k) + "]";
            const Json& row = predictions[k];
            if (!row.is_array() || row.size() != (v1 ? 6u : 7u) ||
                !std::all_of(row.begin(), row.end(), [](const Json& v) { return v.is_number(); }))
                throw InputError(p_at, v1 ? "must be [class, cx, cy, w, h, conf] numbers"
                                          : "must be [class, cx, cy, w, h, conf, tp50] numbers");
            ScoredBox s;
            s.box.cls = whole_number(row[0], p_at);
            s.box.cx = row[1].get<double>();
            s.box.cy = row[2].get<double>();
            s.box.w = row[3].get<double>();
            s.box.h = row[4].get<double>();
            s.conf = row[5].get<double>();
            if (!v1) {
                const int tp = whole_number(row[6], p_at);
                if (tp > 1) throw InputError(p_at, "tp50 must be 0 or 1");
                s.true_at_50 = tp == 1;
            }
            o.predictions.push_back(s);
        }
        r.images.push_back(std::move(o));
    }
    if (v1) return r;
    const Json& by_tag = require_field(json, "by_tag", where);
    if (!by_tag.is_object()) throw InputError(where + ".by_tag", "must be an object");
    for (const auto& [key, values] : by_tag.items()) {
        const std::string key_at = where + ".by_tag." + key;
        if (!values.is_object()) throw InputError(key_at, "must be an object of tag values");
        for (const auto& [value, m] : values.items()) {
            const std::string at = key_at + "." + value;
            if (!m.is_object()) throw InputError(at, "must be an object of metrics");
            TagMetrics t;
            t.images = whole_number(require_field(m, "images", at), at + ".images");
            t.instances = whole_number(require_field(m, "instances", at), at + ".instances");
            t.p = get_number(m, "p", at);
            t.r = get_number(m, "r", at);
            t.map50 = get_number(m, "map50", at);
            t.map50_95 = get_number(m, "map50_95", at);
            r.by_tag[key][value] = t;
        }
    }
    return r;
}

}  // namespace crucible::data
