#include "core/base/options_schema.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "core/base/error.h"

namespace crucible {

const char* option_type_name(OptionType type) {
    switch (type) {
        case OptionType::Boolean:
            return "boolean";
        case OptionType::Integer:
            return "integer";
        case OptionType::Number:
            return "number";
        case OptionType::String:
            return "string";
        case OptionType::Choice:
            return "enum";
        case OptionType::Path:
            return "path";
        case OptionType::List:
            return "list";
    }
    return "string";
}

static OptionType option_type_from_name(const std::string& name) {
    for (auto t : {OptionType::Boolean, OptionType::Integer, OptionType::Number, OptionType::String,
                   OptionType::Choice, OptionType::Path, OptionType::List})
        if (name == option_type_name(t)) return t;
    throw InputError("schema", "unknown option type '" + name + "'");
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
    std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j)
        prev[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        cur[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j)
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
        std::swap(prev, cur);
    }
    return prev[b.size()];
}

OptionSchema& OptionSchema::add(OptionSpec spec) {
    if (find(spec.name))
        throw Error("schema " + task_ + ": option '" + spec.name + "' declared twice");
    options_.push_back(std::move(spec));
    return *this;
}

const OptionSpec* OptionSchema::find(const std::string& name) const {
    for (const auto& o : options_)
        if (o.name == name) return &o;
    return nullptr;
}

Json OptionSchema::to_json() const {
    Json opts = Json::array();
    for (const auto& o : options_) {
        Json j = {{"name", o.name},
                  {"type", option_type_name(o.type)},
                  {"default", o.default_value},
                  {"help", o.help},
                  {"group", o.group},
                  {"required", o.required}};
        if (o.min) j["min"] = *o.min;
        if (o.max) j["max"] = *o.max;
        if (!o.choices.empty()) j["enum"] = o.choices;
        opts.push_back(std::move(j));
    }
    return {{"task", task_}, {"title", title_}, {"options", opts}};
}

OptionSchema OptionSchema::from_json(const Json& json) {
    OptionSchema s(get_string(json, "task", "schema"), json.value("title", std::string()));
    const Json& opts = require_field(json, "options", "schema");
    if (!opts.is_array()) throw InputError("schema", "field 'options': expected array");
    for (const auto& o : opts) {
        OptionSpec spec;
        spec.name = get_string(o, "name", "schema option");
        const std::string where = "schema option '" + spec.name + "'";
        spec.type = option_type_from_name(get_string(o, "type", where));
        spec.default_value = o.value("default", Json());
        if (o.contains("min")) spec.min = get_number(o, "min", where);
        if (o.contains("max")) spec.max = get_number(o, "max", where);
        if (o.contains("enum")) spec.choices = o["enum"].get<std::vector<std::string>>();
        spec.help = o.value("help", std::string());
        spec.group = o.value("group", std::string("general"));
        spec.required = o.value("required", false);
        s.add(std::move(spec));
    }
    return s;
}

static std::string suggestion(const OptionSchema& schema, const std::string& name) {
    std::string best;
    std::size_t best_d = 3;  // only close names are worth suggesting
    for (const auto& o : schema.options()) {
        std::size_t d = edit_distance(name, o.name);
        if (d < best_d) {
            best_d = d;
            best = o.name;
        }
    }
    return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

static Json check_value(const OptionSpec& o, const Json& v) {
    const std::string& n = o.name;
    auto range = [&](double x) {
        if (o.min && x < *o.min)
            throw InputError(
                n, "value " + Json(x).dump() + " is below the minimum " + Json(*o.min).dump());
        if (o.max && x > *o.max)
            throw InputError(
                n, "value " + Json(x).dump() + " is above the maximum " + Json(*o.max).dump());
    };
    switch (o.type) {
        case OptionType::Boolean:
            if (!v.is_boolean())
                throw InputError(n, std::string("expected true or false, got ") + v.type_name());
            return v;
        case OptionType::Integer:
            if (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>() &&
                std::abs(v.get<double>()) < 9e15) {
                range(v.get<double>());
                return Json(static_cast<long long>(v.get<double>()));
            }
            if (!v.is_number_integer())
                throw InputError(n, std::string("expected an integer, got ") + v.dump());
            range(static_cast<double>(v.get<long long>()));
            return v;
        case OptionType::Number:
            if (!v.is_number())
                throw InputError(n, std::string("expected a number, got ") + v.dump());
            if (!std::isfinite(v.get<double>())) throw InputError(n, "expected a finite number");
            range(v.get<double>());
            return v;
        case OptionType::Choice: {
            if (!v.is_string())
                throw InputError(n, std::string("expected one of the choices, got ") + v.dump());
            auto s = v.get<std::string>();
            if (std::find(o.choices.begin(), o.choices.end(), s) == o.choices.end()) {
                std::string list;
                for (const auto& c : o.choices)
                    list += (list.empty() ? "" : ", ") + c;
                throw InputError(n, "'" + s + "' is not one of: " + list);
            }
            return v;
        }
        case OptionType::String:
        case OptionType::Path:
            if (!v.is_string())
                throw InputError(n, std::string("expected text, got ") + v.type_name());
            return v;
        case OptionType::List:
            if (!v.is_array())
                throw InputError(n, std::string("expected a list, got ") + v.type_name());
            return v;
    }
    return v;
}

Json OptionSchema::resolve(const Json& config) const {
    if (!config.is_null() && !config.is_object())
        throw InputError("config", "expected an object of options");
    Json out = Json::object();
    if (config.is_object()) {
        for (auto it = config.begin(); it != config.end(); ++it) {
            const OptionSpec* o = find(it.key());
            if (!o)
                throw InputError(it.key(),
                                 "unknown option for task " + task_ + suggestion(*this, it.key()));
            out[it.key()] = it.value().is_null() ? Json() : check_value(*o, it.value());
        }
    }
    for (const auto& o : options_) {
        if (out.contains(o.name) && !out[o.name].is_null()) continue;
        if (o.required && o.default_value.is_null())
            throw InputError(o.name, "is required: " + o.help);
        out[o.name] = o.default_value;
    }
    return out;
}

Json OptionSchema::parse_value(const std::string& name, const std::string& text) const {
    const OptionSpec* o = find(name);
    if (!o) throw InputError(name, "unknown option for task " + task_ + suggestion(*this, name));
    auto number = [&](bool integer) -> Json {
        char* end = nullptr;
        if (integer) {
            long long v = std::strtoll(text.c_str(), &end, 10);
            if (end && *end == '\0' && !text.empty()) return v;
        }
        double d = std::strtod(text.c_str(), &end);
        if (text.empty() || !end || *end != '\0')
            throw InputError(name,
                             "'" + text + "' is not a " + (integer ? "whole number" : "number"));
        return d;
    };
    switch (o->type) {
        case OptionType::Boolean: {
            std::string t = text;
            std::transform(t.begin(), t.end(), t.begin(), ::tolower);
            if (t == "true" || t == "1" || t == "yes" || t == "on") return true;
            if (t == "false" || t == "0" || t == "no" || t == "off") return false;
            throw InputError(name, "'" + text + "' is not true or false");
        }
        case OptionType::Integer:
            return number(true);
        case OptionType::Number:
            return number(false);
        case OptionType::List: {
            Json arr = Json::array();
            std::size_t start = 0;
            while (start <= text.size()) {
                std::size_t comma = text.find(',', start);
                std::string item = text.substr(
                    start, comma == std::string::npos ? std::string::npos : comma - start);
                if (!item.empty()) arr.push_back(item);
                if (comma == std::string::npos) break;
                start = comma + 1;
            }
            return arr;
        }
        default:
            return text;
    }
}

Json OptionSchema::parse_key_values(const std::vector<std::string>& words) const {
    Json out = Json::object();
    for (const auto& w : words) {
        auto eq = w.find('=');
        if (eq == std::string::npos || eq == 0)
            throw InputError(w, "expected key=value (for example epochs=50)");
        std::string key = w.substr(0, eq);
        out[key] = parse_value(key, w.substr(eq + 1));
    }
    return out;
}

OptionSpec option_spec(std::string name, OptionType type, Json default_value, std::string help,
                       std::string group, std::optional<double> min, std::optional<double> max,
                       std::vector<std::string> choices) {
    OptionSpec s;
    s.name = std::move(name);
    s.type = type;
    s.default_value = std::move(default_value);
    s.help = std::move(help);
    s.group = std::move(group);
    s.min = min;
    s.max = max;
    s.choices = std::move(choices);
    return s;
}

OptionSpec number_option(std::string name, double default_value, std::optional<double> min,
                         std::optional<double> max, std::string help, std::string group) {
    return option_spec(std::move(name), OptionType::Number, default_value, std::move(help),
                       std::move(group), min, max);
}

OptionSpec integer_option(std::string name, long long default_value, std::optional<double> min,
                          std::optional<double> max, std::string help, std::string group) {
    return option_spec(std::move(name), OptionType::Integer, default_value, std::move(help),
                       std::move(group), min, max);
}

OptionSpec boolean_option(std::string name, bool default_value, std::string help,
                          std::string group) {
    return option_spec(std::move(name), OptionType::Boolean, default_value, std::move(help),
                       std::move(group));
}

OptionSpec text_option(std::string name, std::string default_value, std::string help,
                       std::string group, OptionType type) {
    return option_spec(std::move(name), type, std::move(default_value), std::move(help),
                       std::move(group));
}

}  // namespace crucible
