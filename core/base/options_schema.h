#pragma once
// Task options described as data (DESIGN.md "Task plugins"): each option has a type, default,
// range, choices, help and group. The GUI draws one generic form from the schema's JSON, the
// CLI parses key=value pairs against it, and resolve() validates a whole config, naming the
// offending option in every message.
#include <optional>
#include <string>
#include <vector>

#include "core/base/json.h"

namespace crucible {

enum class OptionType { Boolean, Integer, Number, String, Choice, Path, List };

const char* option_type_name(OptionType type);

struct OptionSpec {
    std::string name;
    OptionType type = OptionType::String;
    Json default_value;         // null = required when `required`, else "unset"
    std::optional<double> min;  // Integer/Number only, inclusive
    std::optional<double> max;
    std::vector<std::string> choices;  // Choice only
    std::string help;
    std::string group = "general";
    bool required = false;
};

class OptionSchema {
  public:
    OptionSchema() = default;
    OptionSchema(std::string task, std::string title)
        : task_(std::move(task)), title_(std::move(title)) {}

    OptionSchema& add(OptionSpec spec);
    const std::string& task() const { return task_; }
    const std::string& title() const { return title_; }
    const std::vector<OptionSpec>& options() const { return options_; }
    const OptionSpec* find(const std::string& name) const;

    // {"task":..., "title":...,
    // "options":[{"name","type","default","min","max","enum","help","group","required"}]}
    Json to_json() const;
    static OptionSchema from_json(const Json& json);

    // Defaults filled in, every value type- and range-checked; unknown options are refused with
    // a "did you mean" hint. Throws InputError whose where() is the option name.
    Json resolve(const Json& config) const;

    // Converts the text of a CLI `key=value` to the option's JSON type ("0.01" -> 0.01).
    Json parse_value(const std::string& name, const std::string& text) const;

    // Parses `key=value` words into a config object (not yet resolved).
    Json parse_key_values(const std::vector<std::string>& words) const;

  private:
    std::string task_;
    std::string title_;
    std::vector<OptionSpec> options_;
};

// Builders for schema entries, so schemas read as one line per option.
OptionSpec option_spec(std::string name, OptionType type, Json default_value, std::string help,
                       std::string group = "general", std::optional<double> min = std::nullopt,
                       std::optional<double> max = std::nullopt,
                       std::vector<std::string> choices = {});
OptionSpec number_option(std::string name, double default_value, std::optional<double> min,
                         std::optional<double> max, std::string help, std::string group);
OptionSpec integer_option(std::string name, long long default_value, std::optional<double> min,
                          std::optional<double> max, std::string help, std::string group);
OptionSpec boolean_option(std::string name, bool default_value, std::string help,
                          std::string group);
OptionSpec text_option(std::string name, std::string default_value, std::string help,
                       std::string group, OptionType type = OptionType::String);

// Levenshtein distance, for "did you mean" hints.
std::size_t edit_distance(const std::string& a, const std::string& b);

}  // namespace crucible
