#include "core/data/formats/xml_reader.h"

#include <cstdint>

#include "core/base/error.h"

namespace crucible::data {
namespace {

bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

std::string trim(std::string_view s) {
    while (!s.empty() && is_space(s.front()))
        s.remove_prefix(1);
    while (!s.empty() && is_space(s.back()))
        s.remove_suffix(1);
    return std::string(s);
}

void append_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
        out += char(cp);
    } else if (cp < 0x800) {
        out += char(0xC0 | (cp >> 6));
        out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += char(0xE0 | (cp >> 12));
        out += char(0x80 | ((cp >> 6) & 0x3F));
        out += char(0x80 | (cp & 0x3F));
    } else {
        out += char(0xF0 | (cp >> 18));
        out += char(0x80 | ((cp >> 12) & 0x3F));
        out += char(0x80 | ((cp >> 6) & 0x3F));
        out += char(0x80 | (cp & 0x3F));
    }
}

class Parser {
  public:
    Parser(std::string_view text, const std::string& where, std::size_t max_depth)
        : s_(text), where_(where), max_depth_(max_depth) {
        if (s_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;
    }

    XmlElement run() {
        XmlElement document;  // holds the root element as its only child
        std::vector<XmlElement*> stack{&document};
        while (pos_ < s_.size()) {
            if (s_[pos_] != '<') {
                const auto end = s_.find('<', pos_);
                const auto raw =
                    s_.substr(pos_, end == std::string_view::npos ? s_.size() - pos_ : end - pos_);
                const std::string text = decode(raw);
                if (stack.size() == 1) {
                    if (!trim(text).empty()) fail("text outside the root element");
                } else {
                    stack.back()->text += text;
                }
                advance(raw.size());
                continue;
            }
            if (starts("<?")) {
                skip_past("?>", "unterminated processing instruction");
            } else if (starts("<!--")) {
                skip_past("-->", "unterminated comment");
            } else if (starts("<![CDATA[")) {
                const auto end = s_.find("]]>", pos_ + 9);
                if (end == std::string_view::npos) fail("unterminated CDATA section");
                if (stack.size() == 1) fail("CDATA outside the root element");
                stack.back()->text += std::string(s_.substr(pos_ + 9, end - pos_ - 9));
                advance(end + 3 - pos_);
            } else if (starts("<!")) {
                skip_declaration();
            } else if (starts("</")) {
                advance(2);
                const std::string name = read_name();
                skip_spaces();
                expect('>');
                if (stack.size() == 1) fail("closing tag </" + name + "> without an opening tag");
                if (stack.back()->name != name)
                    fail("closing tag </" + name + "> does not match <" + stack.back()->name +
                         "> (line " + std::to_string(stack.back()->line) + ")");
                stack.pop_back();
            } else {
                advance(1);
                XmlElement element;
                element.line = line_;
                element.name = read_name();
                bool self_closing = false;
                while (true) {
                    skip_spaces();
                    if (pos_ >= s_.size()) fail("unterminated tag <" + element.name + ">");
                    if (starts("/>")) {
                        advance(2);
                        self_closing = true;
                        break;
                    }
                    if (s_[pos_] == '>') {
                        advance(1);
                        break;
                    }
                    std::string attribute = read_name();
                    skip_spaces();
                    expect('=');
                    skip_spaces();
                    if (pos_ >= s_.size() || (s_[pos_] != '"' && s_[pos_] != '\''))
                        fail("attribute value must be quoted");
                    const char quote = s_[pos_];
                    const auto end = s_.find(quote, pos_ + 1);
                    if (end == std::string_view::npos) fail("unterminated attribute value");
                    std::string value = decode(s_.substr(pos_ + 1, end - pos_ - 1));
                    advance(end + 1 - pos_);
                    element.attributes.emplace_back(std::move(attribute), std::move(value));
                }
                if (stack.size() == 1 && !document.children.empty())
                    fail("more than one root element");
                if (stack.size() > max_depth_) fail("elements nested too deeply");
                stack.back()->children.push_back(std::move(element));
                if (!self_closing) stack.push_back(&stack.back()->children.back());
            }
        }
        if (stack.size() > 1)
            fail("end of file inside <" + stack.back()->name + "> (line " +
                 std::to_string(stack.back()->line) + ")");
        if (document.children.empty()) fail("no root element");
        return std::move(document.children.front());
    }

  private:
    [[noreturn]] void fail(const std::string& what) const {
        throw InputError(where_ + ":" + std::to_string(line_), what);
    }
    bool starts(std::string_view prefix) const { return s_.substr(pos_, prefix.size()) == prefix; }
    void advance(std::size_t n) {
        for (std::size_t i = 0; i < n && pos_ < s_.size(); ++i, ++pos_)
            if (s_[pos_] == '\n') ++line_;
    }
    void skip_spaces() {
        while (pos_ < s_.size() && is_space(s_[pos_]))
            advance(1);
    }
    void skip_past(std::string_view end, const char* message) {
        const auto at = s_.find(end, pos_ + 2);
        if (at == std::string_view::npos) fail(message);
        advance(at + end.size() - pos_);
    }
    void skip_declaration() {  // <!DOCTYPE ... [ ... ]> : skipped, never interpreted
        int depth = 0;
        while (pos_ < s_.size()) {
            const char c = s_[pos_];
            advance(1);
            if (c == '[') ++depth;
            if (c == ']') --depth;
            if (c == '>' && depth <= 0) return;
        }
        fail("unterminated declaration");
    }
    void expect(char c) {
        if (pos_ >= s_.size() || s_[pos_] != c) fail(std::string("expected '") + c + "'");
        advance(1);
    }
    std::string read_name() {
        const std::size_t start = pos_;
        while (pos_ < s_.size() && !is_space(s_[pos_]) && s_[pos_] != '>' && s_[pos_] != '/' &&
               s_[pos_] != '=' && s_[pos_] != '<' && s_[pos_] != '"' && s_[pos_] != '\'')
            ++pos_;
        if (pos_ == start) fail("expected a name");
        return std::string(s_.substr(start, pos_ - start));
    }
    std::string decode(std::string_view raw) const {
        std::string out;
        out.reserve(raw.size());
        for (std::size_t i = 0; i < raw.size(); ++i) {
            if (raw[i] != '&') {
                out += raw[i];
                continue;
            }
            const auto semi = raw.find(';', i);
            if (semi == std::string_view::npos || semi - i > 12)
                fail("'&' that starts no entity (write &amp;)");
            const auto entity = raw.substr(i + 1, semi - i - 1);
            if (entity == "lt")
                out += '<';
            else if (entity == "gt")
                out += '>';
            else if (entity == "amp")
                out += '&';
            else if (entity == "quot")
                out += '"';
            else if (entity == "apos")
                out += '\'';
            else if (entity.size() > 1 && entity[0] == '#') {
                std::uint32_t cp = 0;
                const bool hex = entity[1] == 'x' || entity[1] == 'X';
                const auto digits = entity.substr(hex ? 2 : 1);
                if (digits.empty()) fail("empty character reference");
                for (char c : digits) {
                    int v;
                    if (c >= '0' && c <= '9')
                        v = c - '0';
                    else if (hex && c >= 'a' && c <= 'f')
                        v = c - 'a' + 10;
                    else if (hex && c >= 'A' && c <= 'F')
                        v = c - 'A' + 10;
                    else
                        fail("bad character reference &" + std::string(entity) + ";");
                    cp = cp * (hex ? 16 : 10) + std::uint32_t(v);
                    if (cp > 0x10FFFF) fail("character reference out of range");
                }
                if (cp == 0 || (cp >= 0xD800 && cp <= 0xDFFF)) fail("invalid character reference");
                append_utf8(out, cp);
            } else {
                fail("unknown entity &" + std::string(entity) +
                     "; (only the predefined XML entities are read)");
            }
            i = semi;
        }
        return out;
    }

    std::string_view s_;
    std::string where_;
    std::size_t max_depth_;
    std::size_t pos_ = 0;
    int line_ = 1;
};

}  // namespace

const XmlElement* XmlElement::child(std::string_view child_name) const {
    for (const auto& c : children)
        if (c.name == child_name) return &c;
    return nullptr;
}

std::vector<const XmlElement*> XmlElement::children_named(std::string_view child_name) const {
    std::vector<const XmlElement*> out;
    for (const auto& c : children)
        if (c.name == child_name) out.push_back(&c);
    return out;
}

std::string XmlElement::child_text(std::string_view child_name) const {
    const auto* c = child(child_name);
    return c ? trim(c->text) : std::string();
}

XmlElement parse_xml(std::string_view text, const std::string& where, std::size_t max_depth) {
    return Parser(text, where, max_depth).run();
}

std::string xml_escape(std::string_view text) {
    std::string out;
    for (char c : text) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&quot;";
                break;
            case '\'':
                out += "&apos;";
                break;
            default:
                out += c;
        }
    }
    return out;
}

}  // namespace crucible::data
