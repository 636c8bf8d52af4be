#include "ui/options_form.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleValidator>
#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QPushButton>
#include <QRegularExpression>
#include <QSpinBox>
#include <QVBoxLayout>
#include <climits>
#include <cmath>
#include <vector>

#include "core/base/error.h"

namespace crucible::ui {

namespace {

QString qs(const std::string& s) {
    return QString::fromStdString(s);
}

int clamp_int(const std::optional<double>& v, int fallback) {
    if (!v) return fallback;
    if (*v <= INT_MIN) return INT_MIN;
    if (*v >= INT_MAX) return INT_MAX;
    return static_cast<int>(std::ceil(*v - 1e-9));
}

}  // namespace

QString shell_quote(const QString& word) {
    static const QRegularExpression safe(QStringLiteral("^[A-Za-z0-9_@%+=:,./-]+$"));
    if (!word.isEmpty() && safe.match(word).hasMatch()) return word;
    QString out = word;
    out.replace(QStringLiteral("'"), QStringLiteral("'\\''"));
    return QStringLiteral("'") + out + QStringLiteral("'");
}

QString option_value_text(const Json& value) {
    if (value.is_string()) return qs(value.get<std::string>());
    if (value.is_array()) {
        QStringList parts;
        for (const auto& item : value)
            parts << option_value_text(item);
        return parts.join(QLatin1Char(','));
    }
    if (value.is_null()) return {};
    return qs(value.dump());
}

OptionsForm::OptionsForm(const Json& schema_json, QWidget* parent)
    : QWidget(parent), schema_(OptionSchema::from_json(schema_json)) {
    build();
}

void OptionsForm::build() {
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(0, 0, 0, 0);
    std::vector<std::string> groups;
    for (const auto& o : schema_.options())
        if (std::find(groups.begin(), groups.end(), o.group) == groups.end())
            groups.push_back(o.group);
    for (const auto& group : groups) {
        auto* box = new QGroupBox(qs(group), this);
        auto* form = new QFormLayout(box);
        for (const auto& o : schema_.options()) {
            if (o.group != group) continue;
            QWidget* editor = nullptr;
            QWidget* row = nullptr;
            switch (o.type) {
                case OptionType::Boolean: {
                    auto* w = new QCheckBox(box);
                    connect(w, &QCheckBox::toggled, this, &OptionsForm::changed);
                    editor = w;
                    break;
                }
                case OptionType::Integer: {
                    auto* w = new QSpinBox(box);
                    w->setRange(clamp_int(o.min, INT_MIN), clamp_int(o.max, INT_MAX));
                    w->setAccelerated(true);
                    connect(w, &QSpinBox::valueChanged, this, &OptionsForm::changed);
                    editor = w;
                    break;
                }
                case OptionType::Choice: {
                    auto* w = new QComboBox(box);
                    for (const auto& c : o.choices)
                        w->addItem(qs(c));
                    connect(w, &QComboBox::currentIndexChanged, this, &OptionsForm::changed);
                    editor = w;
                    break;
                }
                case OptionType::Number: {
                    auto* w = new QLineEdit(box);
                    auto* v = new QDoubleValidator(w);
                    v->setLocale(QLocale::c());
                    v->setNotation(QDoubleValidator::ScientificNotation);
                    if (o.min) v->setBottom(*o.min);
                    if (o.max) v->setTop(*o.max);
                    w->setValidator(v);
                    connect(w, &QLineEdit::textChanged, this, &OptionsForm::changed);
                    editor = w;
                    break;
                }
                case OptionType::Path: {
                    auto* holder = new QWidget(box);
                    auto* h = new QHBoxLayout(holder);
                    h->setContentsMargins(0, 0, 0, 0);
                    auto* w = new QLineEdit(holder);
                    auto* browse = new QPushButton(tr("…"), holder);
                    browse->setToolTip(tr("Choose a file"));
                    h->addWidget(w, 1);
                    h->addWidget(browse);
                    connect(browse, &QPushButton::clicked, w,
                            [this, browse, w] { browse_path(browse, w); });
                    connect(w, &QLineEdit::textChanged, this, &OptionsForm::changed);
                    editor = w;
                    row = holder;
                    break;
                }
                case OptionType::List:
                case OptionType::String: {
                    auto* w = new QLineEdit(box);
                    if (o.type == OptionType::List)
                        w->setPlaceholderText(tr("comma-separated list"));
                    connect(w, &QLineEdit::textChanged, this, &OptionsForm::changed);
                    editor = w;
                    break;
                }
            }
            editor->setObjectName(qs("option:" + o.name));
            QString tip = qs(o.help);
            if (o.min || o.max)
                tip += QStringLiteral("\n") + tr("range: %1 … %2")
                                                  .arg(o.min ? QString::number(*o.min) : "-∞",
                                                       o.max ? QString::number(*o.max) : "∞");
            editor->setToolTip(tip);
            auto* label =
                new QLabel(qs(o.name) + (o.required ? QStringLiteral(" *") : QString()), box);
            label->setToolTip(tip);
            label->setBuddy(editor);
            form->addRow(label, row ? row : editor);
            editors_[o.name] = editor;
        }
        outer->addWidget(box);
    }
    outer->addStretch(1);
    reset_to_defaults();
}

void OptionsForm::set_server_browser(std::function<QString(QWidget*)> pick) {
    server_browser_ = std::move(pick);
}

void OptionsForm::browse_path(QWidget* anchor, QLineEdit* edit) {
    bool on_server = false;
    if (server_browser_) {
        QMenu menu(anchor);
        menu.addAction(tr("On this computer… (uploaded with the run)"));
        QAction* there = menu.addAction(tr("On the server…"));
        QAction* chosen = menu.exec(anchor->mapToGlobal(QPoint(0, anchor->height())));
        if (!chosen) return;
        on_server = chosen == there;
    }
    const QString f = on_server
                          ? server_browser_(this)
                          : QFileDialog::getOpenFileName(edit, tr("Choose a file"), edit->text());
    if (!f.isEmpty()) edit->setText(f);
}

QWidget* OptionsForm::editor(const std::string& name) const {
    auto it = editors_.find(name);
    return it == editors_.end() ? nullptr : it->second;
}

void OptionsForm::set_editor_value(const OptionSpec& o, const Json& v) {
    QWidget* e = editor(o.name);
    if (!e) return;
    if (auto* check = qobject_cast<QCheckBox*>(e)) {
        check->setChecked(v.is_boolean() ? v.get<bool>() : false);
    } else if (auto* spin = qobject_cast<QSpinBox*>(e)) {
        if (v.is_number())
            spin->setValue(static_cast<int>(std::llround(v.get<double>())));
        else
            spin->setValue(std::clamp(0, spin->minimum(), spin->maximum()));
    } else if (auto* combo = qobject_cast<QComboBox*>(e)) {
        int i = v.is_string() ? combo->findText(qs(v.get<std::string>())) : -1;
        combo->setCurrentIndex(std::max(i, 0));
    } else if (auto* line = qobject_cast<QLineEdit*>(e)) {
        line->setText(option_value_text(v));
    }
}

Json OptionsForm::editor_value(const OptionSpec& o, bool* present) const {
    *present = true;
    QWidget* e = editor(o.name);
    if (auto* w = qobject_cast<QCheckBox*>(e)) return w->isChecked();
    if (auto* w = qobject_cast<QSpinBox*>(e)) return static_cast<long long>(w->value());
    if (auto* w = qobject_cast<QComboBox*>(e)) return w->currentText().toStdString();
    auto* w = qobject_cast<QLineEdit*>(e);
    const QString text = w ? w->text().trimmed() : QString();
    if (text.isEmpty() && o.type != OptionType::String) {
        if (o.type == OptionType::List) return Json::array();
        *present = false;
        return nullptr;
    }
    if (text.isEmpty() && o.default_value.is_null()) {
        *present = false;
        return nullptr;
    }
    return schema_.parse_value(o.name, text.toStdString());
}

Json OptionsForm::values(QStringList* errors) const {
    Json out = Json::object();
    for (const auto& o : schema_.options()) {
        try {
            bool present = false;
            Json v = editor_value(o, &present);
            if (present) out[o.name] = std::move(v);
        } catch (const std::exception& e) {
            if (errors) *errors << QString::fromUtf8(e.what());
        }
    }
    return out;
}

Json OptionsForm::changed_values(QStringList* errors) const {
    Json all = values(errors);
    Json out = Json::object();
    for (const auto& o : schema_.options()) {
        auto it = all.find(o.name);
        if (it == all.end()) continue;
        bool same = *it == o.default_value;
        if (!same && it->is_number() && o.default_value.is_number())
            same = it->get<double>() == o.default_value.get<double>();
        if (!same) out[o.name] = *it;
    }
    return out;
}

Json OptionsForm::resolved() const {
    QStringList errors;
    Json v = values(&errors);
    if (!errors.isEmpty())
        throw InputError("options", errors.join(QStringLiteral("; ")).toStdString());
    return schema_.resolve(v);
}

void OptionsForm::set_values(const Json& config) {
    if (!config.is_object()) return;
    for (const auto& o : schema_.options()) {
        auto it = config.find(o.name);
        if (it != config.end()) set_editor_value(o, *it);
    }
}

void OptionsForm::reset_to_defaults() {
    for (const auto& o : schema_.options())
        set_editor_value(o, o.default_value);
}

QStringList OptionsForm::train_arguments() const {
    QStringList words{qs(schema_.task())};
    Json changed = changed_values();
    for (const auto& o : schema_.options()) {
        auto it = changed.find(o.name);
        if (it == changed.end()) continue;
        words << qs(o.name) + QLatin1Char('=') + option_value_text(*it);
    }
    return words;
}

QString OptionsForm::command_line(const QStringList& extra_words) const {
    QStringList words{QStringLiteral("crucible"), QStringLiteral("train")};
    for (const auto& w : train_arguments() + extra_words)
        words << shell_quote(w);
    return words.join(QLatin1Char(' '));
}

}  // namespace crucible::ui
