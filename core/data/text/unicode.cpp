#include "core/data/text/unicode.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <cctype>
#include <cstdint>

#include "core/base/error.h"
#include "core/base/utf8.h"

#ifdef CRUCIBLE_HAVE_ICU
#include <unicode/locid.h>
#include <unicode/normalizer2.h>
#include <unicode/unistr.h>
#endif

namespace crucible::data::text {

struct Regex::Impl {
    pcre2_code* code = nullptr;
};

Regex::Regex(const std::string& pattern, const std::string& where, Options options)
    : impl_(std::make_unique<Impl>()) {
    int error = 0;
    PCRE2_SIZE offset = 0;
    std::uint32_t flags = options.literal ? (PCRE2_UTF | PCRE2_LITERAL) : (PCRE2_UTF | PCRE2_UCP);
    if (options.case_insensitive) flags |= PCRE2_CASELESS;
    impl_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), flags,
                                &error, &offset, nullptr);
    if (impl_->code == nullptr) {
        PCRE2_UCHAR message[256];
        pcre2_get_error_message(error, message, sizeof message);
        throw InputError(where, "bad regular expression at offset " + std::to_string(offset) +
                                    ": " + reinterpret_cast<const char*>(message));
    }
    pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE);  // optional speed-up; falls back
}

Regex::~Regex() {
    if (impl_ && impl_->code) pcre2_code_free(impl_->code);
}

std::vector<std::pair<std::size_t, std::size_t>> Regex::find_all(std::string_view text) const {
    std::vector<std::pair<std::size_t, std::size_t>> out;
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(impl_->code, nullptr);
    if (md == nullptr) throw Error("out of memory for a regex match");
    std::size_t start = 0;
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    while (start <= text.size()) {
        const int rc =
            pcre2_match(impl_->code, subject, text.size(), start, PCRE2_NO_UTF_CHECK, md, nullptr);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) {
            pcre2_match_data_free(md);
            PCRE2_UCHAR message[256];
            pcre2_get_error_message(rc, message, sizeof message);
            throw Error(std::string("regex match failed: ") +
                        reinterpret_cast<const char*>(message));
        }
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
        const std::size_t b = ov[0], e = ov[1];
        if (e > b) {
            out.emplace_back(b, e);
            start = e;
        } else {
            // Empty match: step over one character.
            if (b >= text.size()) break;
            start = b + decode_utf8_char(text, b).length;
        }
    }
    pcre2_match_data_free(md);
    return out;
}

std::string unicode_normalize(std::string_view text, const std::string& form) {
#ifdef CRUCIBLE_HAVE_ICU
    UErrorCode status = U_ZERO_ERROR;
    const icu::Normalizer2* n = nullptr;
    if (form == "NFC")
        n = icu::Normalizer2::getNFCInstance(status);
    else if (form == "NFD")
        n = icu::Normalizer2::getNFDInstance(status);
    else if (form == "NFKC")
        n = icu::Normalizer2::getNFKCInstance(status);
    else if (form == "NFKD")
        n = icu::Normalizer2::getNFKDInstance(status);
    else
        throw Error("unknown normalization form " + form);
    if (U_FAILURE(status)) throw Error("ICU normalizer unavailable");
    const icu::UnicodeString in = icu::UnicodeString::fromUTF8(
        icu::StringPiece(text.data(), static_cast<std::int32_t>(text.size())));
    const icu::UnicodeString out = n->normalize(in, status);
    if (U_FAILURE(status)) throw Error("ICU normalization failed");
    std::string result;
    out.toUTF8String(result);
    return result;
#else
    bool ascii = true;
    for (char c : text)
        ascii = ascii && static_cast<unsigned char>(c) < 0x80;
    if (ascii) return std::string(text);  // every form leaves ASCII alone
    throw Error("Unicode normalization " + form + " needs ICU, which this build lacks");
#endif
}

std::string unicode_lowercase(std::string_view text) {
#ifdef CRUCIBLE_HAVE_ICU
    icu::UnicodeString s = icu::UnicodeString::fromUTF8(
        icu::StringPiece(text.data(), static_cast<std::int32_t>(text.size())));
    s.toLower(icu::Locale::getRoot());
    std::string result;
    s.toUTF8String(result);
    return result;
#else
    std::string out(text);
    for (char& c : out)
        if (static_cast<unsigned char>(c) < 0x80) c = static_cast<char>(std::tolower(c));
    return out;
#endif
}

}  // namespace crucible::data::text
