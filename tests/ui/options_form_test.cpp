// The run-setup form is generated from a schema: one editor per option, typed values back,
// only changed options on the command line, and bad input reported by option name.
#include <gtest/gtest.h>

#include <QCheckBox>
#include <QComboBox>
#include <QLineEdit>
#include <QSpinBox>
#include <QTest>

#include "core/base/error.h"
#include "core/store/project.h"
#include "core/store/run_store.h"
#include "tests/ui/qt_test_env.h"
#include "ui/options_form.h"
#include "ui/run_setup.h"

using namespace crucible;
using namespace crucible::ui;

namespace {

Json test_schema() {
    OptionSchema s("toy.task", "Toy task");
    s.add({"epochs", OptionType::Integer, 10, 1.0, 1000.0, {}, "epochs to train", "train"});
    s.add({"lr0", OptionType::Number, 0.01, 0.0, 1.0, {}, "initial learning rate", "optimizer"});
    s.add({"optimizer",
           OptionType::Choice,
           "SGD",
           {},
           {},
           {"SGD", "AdamW", "auto"},
           "",
           "optimizer"});
    s.add({"amp", OptionType::Boolean, true, {}, {}, {}, "mixed precision", "train"});
    s.add({"name", OptionType::String, "exp", {}, {}, {}, "run name", "general"});
    s.add({"weights", OptionType::Path, nullptr, {}, {}, {}, "start weights", "general"});
    s.add({"freeze", OptionType::List, Json::array(), {}, {}, {}, "layers to freeze", "train"});
    return s.to_json();
}

}  // namespace

TEST(OptionsForm, OneEditorPerOptionOfTheRightKind) {
    OptionsForm form(test_schema());
    EXPECT_EQ(form.editor_count(), 7);
    EXPECT_NE(qobject_cast<QSpinBox*>(form.editor("epochs")), nullptr);
    EXPECT_NE(qobject_cast<QLineEdit*>(form.editor("lr0")), nullptr);
    EXPECT_NE(qobject_cast<QComboBox*>(form.editor("optimizer")), nullptr);
    EXPECT_NE(qobject_cast<QCheckBox*>(form.editor("amp")), nullptr);
    EXPECT_NE(qobject_cast<QLineEdit*>(form.editor("weights")), nullptr);
    EXPECT_EQ(form.editor("nope"), nullptr);
    auto* epochs = qobject_cast<QSpinBox*>(form.editor("epochs"));
    EXPECT_EQ(epochs->minimum(), 1);
    EXPECT_EQ(epochs->maximum(), 1000);
}

TEST(OptionsForm, DefaultsComeBackUnchanged) {
    OptionsForm form(test_schema());
    QStringList errors;
    Json v = form.values(&errors);
    EXPECT_TRUE(errors.isEmpty()) << errors.join("; ").toStdString();
    EXPECT_EQ(v["epochs"], 10);
    EXPECT_DOUBLE_EQ(v["lr0"].get<double>(), 0.01);
    EXPECT_EQ(v["optimizer"], "SGD");
    EXPECT_EQ(v["amp"], true);
    EXPECT_EQ(v["name"], "exp");
    EXPECT_FALSE(v.contains("weights"));  // no default and left empty
    EXPECT_EQ(v["freeze"], Json::array());
    EXPECT_TRUE(form.changed_values().empty());
    EXPECT_EQ(form.command_line().toStdString(), "crucible train toy.task");
    EXPECT_NO_THROW(form.resolved());
}

TEST(OptionsForm, EditedValuesProduceTypedJsonAndTheCommand) {
    OptionsForm form(test_schema());
    form.show();
    auto* epochs = qobject_cast<QSpinBox*>(form.editor("epochs"));
    epochs->selectAll();
    QTest::keyClicks(epochs, "25");
    auto* lr = qobject_cast<QLineEdit*>(form.editor("lr0"));
    lr->clear();
    QTest::keyClicks(lr, "0.002");
    qobject_cast<QComboBox*>(form.editor("optimizer"))->setCurrentIndex(1);
    auto* amp = qobject_cast<QCheckBox*>(form.editor("amp"));
    QTest::keyClick(amp, Qt::Key_Space);
    auto* name = qobject_cast<QLineEdit*>(form.editor("name"));
    name->clear();
    QTest::keyClicks(name, "my run");
    QTest::keyClicks(qobject_cast<QLineEdit*>(form.editor("freeze")), "0,1,2");

    Json v = form.values();
    EXPECT_EQ(v["epochs"], 25);
    EXPECT_TRUE(v["epochs"].is_number_integer());
    EXPECT_DOUBLE_EQ(v["lr0"].get<double>(), 0.002);
    EXPECT_EQ(v["optimizer"], "AdamW");
    EXPECT_EQ(v["amp"], false);
    EXPECT_EQ(v["name"], "my run");
    EXPECT_EQ(v["freeze"], Json::array({"0", "1", "2"}));
    Json changed = form.changed_values();
    EXPECT_EQ(changed.size(), 6u);
    EXPECT_EQ(form.command_line().toStdString(),
              "crucible train toy.task epochs=25 lr0=0.002 optimizer=AdamW amp=false "
              "'name=my run' freeze=0,1,2");
    // The command's words parse back to the same config.
    OptionSchema schema = OptionSchema::from_json(test_schema());
    Json parsed = schema.parse_key_values(
        {"epochs=25", "lr0=0.002", "optimizer=AdamW", "amp=false", "name=my run", "freeze=0,1,2"});
    EXPECT_EQ(schema.resolve(parsed), form.resolved());

    form.reset_to_defaults();
    EXPECT_TRUE(form.changed_values().empty());
    form.set_values(changed);
    EXPECT_EQ(form.changed_values(), changed);
}

TEST(OptionsForm, BadInputIsNamedNotCrashed) {
    OptionsForm form(test_schema());
    auto* lr = qobject_cast<QLineEdit*>(form.editor("lr0"));
    lr->setText("fast");  // the validator blocks typing it; set programmatically
    QStringList errors;
    form.values(&errors);
    ASSERT_EQ(errors.size(), 1);
    EXPECT_TRUE(errors.front().startsWith("lr0")) << errors.front().toStdString();
    lr->setText("5");  // out of range
    try {
        form.resolved();
        FAIL() << "expected a range error";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("lr0"), std::string::npos);
    }
    EXPECT_THROW(
        OptionsForm(Json{{"task", "x"}, {"options", {{{"name", "a"}, {"type", "weird"}}}}}),
        InputError);
}

TEST(OptionsForm, ShellQuoting) {
    EXPECT_EQ(shell_quote("epochs=3"), "epochs=3");
    EXPECT_EQ(shell_quote("name=a b"), "'name=a b'");
    EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
    EXPECT_EQ(shell_quote(""), "''");
}

TEST(RunSetup, CreatesADraftRunWithResolvedOptions) {
    auto dir = uitest::temp_dir();
    auto project = store::Project::create(dir / "p.crucible");
    Json tasks = Json::array({test_schema()});
    RunSetupView view(project.get(), tasks);
    EXPECT_EQ(view.task_count(), 1);
    ASSERT_NE(view.form(), nullptr);
    qobject_cast<QSpinBox*>(view.form()->editor("epochs"))->setValue(3);
    EXPECT_EQ(view.command_line().toStdString(), "crucible train toy.task epochs=3");
    auto id = view.create_run("first");
    ASSERT_GE(id, 0) << view.error_text().toStdString();
    auto run = store::get_run(*project, id);
    EXPECT_EQ(run.setup.task, "toy.task");
    EXPECT_EQ(run.setup.name, "first");
    EXPECT_EQ(run.setup.options["epochs"], 3);
    EXPECT_EQ(run.setup.options["optimizer"], "SGD");  // resolved: defaults filled in
    // A bad value is refused with the option's name and creates nothing.
    qobject_cast<QLineEdit*>(view.form()->editor("lr0"))->setText("7");
    EXPECT_EQ(view.create_run("second"), -1);
    EXPECT_TRUE(view.error_text().contains("lr0"));
    EXPECT_EQ(store::list_runs(*project).size(), 1u);
}
