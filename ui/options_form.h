#pragma once
// One generic form drawn from a task's OptionSchema JSON (DESIGN.md "Task plugins"): a group box
// per option group, one editor per option chosen by its type (check box, spin box, number field,
// choice list, text, path with a browse button, comma list), the help as tooltip. Nothing here
// knows a task: every task's options come through the same code.
#include <QString>
#include <QStringList>
#include <QWidget>
#include <functional>
#include <map>
#include <string>

#include "core/base/json.h"
#include "core/base/options_schema.h"

class QLabel;
class QLineEdit;

namespace crucible::ui {

class OptionsForm : public QWidget {
    Q_OBJECT
  public:
    // `schema_json` is one task of `crucible-worker describe` / the agent's /v1/info "tasks".
    // Throws InputError when the schema is malformed.
    explicit OptionsForm(const Json& schema_json, QWidget* parent = nullptr);

    const OptionSchema& schema() const { return schema_; }
    int editor_count() const { return static_cast<int>(editors_.size()); }
    // The editor of an option (QCheckBox, QSpinBox, QLineEdit or QComboBox); null when unknown.
    QWidget* editor(const std::string& name) const;

    // Every option's value as typed JSON, as entered (not range-checked). Options left empty that
    // have no default are omitted. Entries that do not parse are listed in `errors` as
    // "option: what".
    Json values(QStringList* errors = nullptr) const;
    // Only the options whose value differs from the schema default.
    Json changed_values(QStringList* errors = nullptr) const;
    // values() checked by OptionSchema::resolve; throws InputError naming the option.
    Json resolved() const;
    // Sets editors from a config object (unknown keys are ignored; missing ones keep their value).
    void set_values(const Json& config);
    void reset_to_defaults();

    // Where the run goes to a remote server, path options can also be picked there: `pick`
    // returns a server path (empty when cancelled). An empty function leaves only local files.
    void set_server_browser(std::function<QString(QWidget* parent)> pick);
    bool has_server_browser() const { return static_cast<bool>(server_browser_); }

    // The equivalent command line: `crucible train <task> key=value ...` for changed options.
    QString command_line(const QStringList& extra_words = {}) const;
    // The words after `crucible train`, unquoted: the task, then key=value for each option that
    // differs from its default (what command_line shows, for running it).
    QStringList train_arguments() const;

  signals:
    void changed();

  private:
    void build();
    void set_editor_value(const OptionSpec& spec, const Json& value);
    Json editor_value(const OptionSpec& spec, bool* present) const;

    void browse_path(QWidget* anchor, QLineEdit* edit);

    OptionSchema schema_;
    std::map<std::string, QWidget*> editors_;
    std::function<QString(QWidget*)> server_browser_;
};

// Quotes a word for a POSIX shell when it needs it ('it''s' style).
QString shell_quote(const QString& word);

// `key=value` text of a JSON option value (lists joined by commas, as parse_value reads them).
QString option_value_text(const Json& value);

}  // namespace crucible::ui
