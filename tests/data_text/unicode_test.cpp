// core/data/text/unicode.h: the regex's Unicode classes (letters, numbers and spaces beyond
// ASCII, as the tokenizers' patterns need them), its options and errors; case and normalization
// when the build has ICU.
#include "core/data/text/unicode.h"

#include <gtest/gtest.h>

#include "core/base/error.h"

namespace crucible::data::text {
namespace {

std::vector<std::string> matches(const Regex& re, const std::string& text) {
    std::vector<std::string> out;
    for (const auto& [b, e] : re.find_all(text))
        out.push_back(text.substr(b, e - b));
    return out;
}

bool have_icu() {
    try {
        return unicode_normalize("\xEF\xBD\x81", "NFKC") == "a";
    } catch (const Error&) {
        return false;
    }
}

TEST(UnicodeRegex, LetterNumberAndSpaceClassesFollowTheUnicodeTables) {
    const Regex letters("\\p{L}+", "t");
    EXPECT_EQ(matches(letters, "naïve Ωμέγα 中文 كتاب x²"),
              (std::vector<std::string>{"naïve", "Ωμέγα", "中文", "كتاب", "x"}));
    // A combining accent (U+0301, Mn) is no letter: "cafe" + accent + "s".
    EXPECT_EQ(matches(letters, "cafe\xCC\x81s"), (std::vector<std::string>{"cafe", "s"}));
    const Regex numbers("\\p{N}", "t");
    EXPECT_EQ(matches(numbers, "7 ² ٣ Ⅳ 〇 ½ x"),
              (std::vector<std::string>{"7", "²", "٣", "Ⅳ", "〇", "½"}));
    const Regex spaces("\\s+", "t");
    EXPECT_EQ(matches(spaces,
                      "a\xC2\xA0"
                      "b\xE3\x80\x80"
                      "c\xE2\x80\xA8"
                      "d")
                  .size(),
              3u);
}

TEST(UnicodeRegex, OptionsEmptyMatchesAndErrors) {
    const Regex literal("a.b", "t", Regex::Options{.literal = true});
    EXPECT_EQ(matches(literal, "axb a.b"), std::vector<std::string>{"a.b"});
    const Regex caseless("'s|straße", "t", Regex::Options{.case_insensitive = true});
    EXPECT_EQ(matches(caseless, "IT'S STRASSE Straße"), (std::vector<std::string>{"'S", "Straße"}));
    // An empty match steps over one whole character, never into the middle of one.
    EXPECT_EQ(matches(Regex("x*", "t"), "中x"), std::vector<std::string>{"x"});
    EXPECT_TRUE(Regex("a", "t").find_all("").empty());
    try {
        Regex("(\\p{L", "pattern.json");
        ADD_FAILURE() << "accepted";
    } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("pattern.json: bad regular expression at offset"),
                  std::string::npos)
            << e.what();
    }
}

TEST(UnicodeCase, LowercaseAndNormalization) {
    EXPECT_EQ(unicode_lowercase("ABC def"), "abc def");
    EXPECT_EQ(unicode_normalize("plain", "NFKC"), "plain");
    if (!have_icu()) GTEST_SKIP() << "this build has no ICU";
    EXPECT_EQ(unicode_lowercase("ÜNÏCÖDÉ ΣΑΣ"), "ünïcödé σας");
    EXPECT_EQ(unicode_normalize("cafe\xCC\x81", "NFC"), "caf\xC3\xA9");
    EXPECT_EQ(unicode_normalize("ﬁ①", "NFKC"), "fi1");
    EXPECT_THROW(unicode_normalize("x", "NFX"), Error);
}

}  // namespace
}  // namespace crucible::data::text
