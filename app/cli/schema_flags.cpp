#include "app/cli/schema_flags.h"

#include <algorithm>
#include <cstdio>

#include "app/cli/cli_parser.h"
#include "core/base/error.h"

namespace crucible::cli {

SchemaFlags::SchemaFlags(CLI::App& app, const OptionSchema& schema) {
    for (const auto& o : schema.options()) {
        if (app.get_option_no_throw("--" + o.name)) continue;  // the command's own flag wins
        auto flag = std::make_unique<Flag>();
        flag->name = o.name;
        flag->boolean = o.type == OptionType::Boolean;
        flag->option = app.add_option("--" + o.name, flag->value, o.help);
        if (flag->boolean) flag->option->expected(0, 1);
        flags_.push_back(std::move(flag));
    }
}

std::vector<std::string> SchemaFlags::key_values() const {
    std::vector<std::string> out;
    for (const auto& flag : flags_) {
        if (flag->option->count() == 0) continue;
        // `--json` alone means true; `--json false` and `--json=false` carry their value.
        const bool bare = flag->boolean && flag->value.empty();
        out.push_back(flag->name + "=" + (bare ? "true" : flag->value));
    }
    return out;
}

std::vector<std::string> schema_words(const OptionSchema& schema,
                                      const std::vector<std::string>& words,
                                      const std::vector<std::string>& positionals) {
    std::vector<std::string> out;
    std::size_t next = 0;
    for (const auto& word : words) {
        const auto eq = word.find('=');
        if (eq != std::string::npos && eq > 0 && schema.find(word.substr(0, eq))) {
            out.push_back(word);
        } else if (next < positionals.size()) {
            out.push_back(positionals[next++] + "=" + word);
        } else if (eq != std::string::npos && eq > 0) {
            out.push_back(word);  // an unknown key: the schema refuses it with a hint
        } else {
            throw InputError(word, "unexpected argument (see --help)");
        }
    }
    return out;
}

SchemaWords read_schema_words(CLI::App& app, const OptionSchema& schema,
                              const std::vector<std::string>& words,
                              const std::vector<std::string>& positionals) {
    SchemaWords out;
    app.set_help_flag();  // the caller's own help: the schema's groups, defaults and choices
    app.add_flag("-h,--help", out.help, "this help");
    SchemaFlags flags(app, schema);
    if (!words.empty() && words[0] == "help") {
        out.help = true;
        return out;
    }
    std::vector<std::string> extras;
    parse_words(app, words, &extras);
    if (out.help) return out;
    std::vector<std::string> key_values = flags.key_values();
    for (auto& word : schema_words(schema, extras, positionals))
        key_values.push_back(std::move(word));
    out.options = schema.resolve(schema.parse_key_values(key_values));
    return out;
}

void print_schema_options(const OptionSchema& schema) {
    std::vector<std::string> groups;
    for (const auto& o : schema.options())
        if (std::find(groups.begin(), groups.end(), o.group) == groups.end())
            groups.push_back(o.group);
    for (const auto& group : groups) {
        std::printf("\n  [%s]\n", group.c_str());
        for (const auto& o : schema.options()) {
            if (o.group != group) continue;
            std::string value = o.required ? "(required)" : o.default_value.dump();
            if (!o.choices.empty()) {
                std::string choices;
                for (const auto& c : o.choices)
                    choices += (choices.empty() ? "" : "|") + c;
                value += "  {" + choices + "}";
            }
            std::printf("  %-18s %-22s %s\n", o.name.c_str(), value.c_str(), o.help.c_str());
        }
    }
}

}  // namespace crucible::cli
