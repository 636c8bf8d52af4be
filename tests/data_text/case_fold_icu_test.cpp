// core/base/case_fold.cpp's uppercase table against ICU, the library the text code uses for
// Unicode properties: the same simple uppercase mapping for every code point. When a newer ICU
// brings a newer Unicode, this names the first code point that changed: add its run to the table.
#include <gtest/gtest.h>

#ifdef CRUCIBLE_HAVE_ICU
#include <unicode/uchar.h>
#include <unicode/uversion.h>
#endif

#include <cstdio>

#include "core/base/case_fold.h"

TEST(CaseFold, AgreesWithIcuOnEveryCodePoint) {
#ifndef CRUCIBLE_HAVE_ICU
    GTEST_SKIP() << "this build has no ICU to compare with (the Linux build always has it)";
#else
    int differences = 0;
    for (UChar32 c = 0; c <= 0x10FFFF; ++c) {
        if (c >= 0xD800 && c <= 0xDFFF) continue;
        const auto ours =
            static_cast<UChar32>(crucible::simple_uppercase(static_cast<char32_t>(c)));
        const UChar32 icu = u_toupper(c);
        if (ours != icu && ++differences <= 5) {
            char text[96];
            std::snprintf(text, sizeof text, "U+%04X: the table says U+%04X, ICU %s U+%04X",
                          static_cast<unsigned>(c), static_cast<unsigned>(ours), U_UNICODE_VERSION,
                          static_cast<unsigned>(icu));
            ADD_FAILURE() << text;
        }
    }
    EXPECT_EQ(differences, 0);
#endif
}
