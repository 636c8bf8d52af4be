#include "core/data/formats/xml_reader.h"

#include <pugixml.hpp>

#include <algorithm>
#include <cstddef>
#include <utility>

#include "core/base/error.h"
#include "core/base/file_io.h"

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

// 1-based line of a byte offset into the text.
int line_at(std::string_view text, std::ptrdiff_t offset) {
    const auto end = static_cast<std::size_t>(
        std::clamp<std::ptrdiff_t>(offset, 0, static_cast<std::ptrdiff_t>(text.size())));
    return 1 +
           static_cast<int>(std::count(text.begin(), text.begin() + static_cast<long>(end), '\n'));
}

// The innermost element still open when the parser stopped (pugixml keeps the partial tree).
pugi::xml_node innermost_element(const pugi::xml_document& doc) {
    pugi::xml_node node = doc.last_child();
    while (node && node.type() == pugi::node_element) {
        pugi::xml_node last = node.last_child();
        while (last && last.type() != pugi::node_element)
            last = last.previous_sibling();
        if (!last) break;
        node = last;
    }
    return node.type() == pugi::node_element ? node : pugi::xml_node();
}

// pugixml's status in our words (the phrases the hostile-input table checks).
std::string describe(const pugi::xml_parse_result& result, const pugi::xml_document& doc,
                     std::string_view text) {
    switch (result.status) {
        case pugi::status_no_document_element:
            return trim(text).empty() || text.find('<') != std::string_view::npos
                       ? "no root element"
                       : "text outside the root element (no root element)";
        case pugi::status_end_element_mismatch:
            // Stopped at the last byte, or with no closing tag before it: the file ended with
            // elements still open.
            if (static_cast<std::size_t>(result.offset) + 1 >= text.size() ||
                text.rfind("</", static_cast<std::size_t>(result.offset)) ==
                    std::string_view::npos) {
                const pugi::xml_node open = innermost_element(doc);
                if (open) return std::string("end of file inside <") + open.name() + ">";
            }
            return "closing tag does not match the open element";
        case pugi::status_unrecognized_tag:
        case pugi::status_bad_start_element:
        case pugi::status_bad_end_element:
            return "malformed tag (expected a name)";
        case pugi::status_bad_attribute:
            return "malformed attribute (values must be quoted)";
        case pugi::status_bad_comment:
            return "unterminated comment";
        case pugi::status_bad_cdata:
            return "unterminated CDATA section";
        case pugi::status_bad_doctype:
            return "malformed DOCTYPE";
        case pugi::status_bad_pi:
            return "malformed processing instruction";
        default:
            return result.description();
    }
}

void check_utf8(std::string_view value, const std::string& where, int line) {
    if (!is_valid_utf8(value))
        throw InputError(where + ":" + std::to_string(line),
                         "text is not valid UTF-8 (or holds an out of range character reference)");
}

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
    // pugixml expands the five predefined entities and character references only: a DOCTYPE is
    // skipped, its entities are never defined (an unknown &name; stays as written), and nothing
    // is read from outside the text.
    pugi::xml_document doc;
    const pugi::xml_parse_result result =
        doc.load_buffer(text.data(), text.size(), pugi::parse_default, pugi::encoding_utf8);
    if (!result)
        throw InputError(where + ":" + std::to_string(line_at(text, result.offset)),
                         describe(result, doc, text));
    pugi::xml_node root;
    for (pugi::xml_node n : doc.children()) {
        if (n.type() == pugi::node_pcdata || n.type() == pugi::node_cdata)
            throw InputError(where + ":" + std::to_string(line_at(text, n.offset_debug())),
                             "text outside the root element");
        if (n.type() != pugi::node_element) continue;
        if (root)
            throw InputError(where + ":" + std::to_string(line_at(text, n.offset_debug())),
                             "more than one root element");
        root = n;
    }
    if (!root) throw InputError(where + ":1", "no root element");

    // Into our own tree, without recursion (a deep document must not exhaust the stack). Each
    // children vector is sized once, before pointers into it are kept.
    const auto fill = [&](XmlElement& e, pugi::xml_node node) {
        e.name = node.name();
        e.line = line_at(text, node.offset_debug());
        check_utf8(e.name, where, e.line);
        for (pugi::xml_attribute a : node.attributes()) {
            e.attributes.emplace_back(a.name(), a.value());
            check_utf8(e.attributes.back().first, where, e.line);
            check_utf8(e.attributes.back().second, where, e.line);
        }
        for (pugi::xml_node c : node.children())
            if (c.type() == pugi::node_pcdata || c.type() == pugi::node_cdata) e.text += c.value();
        check_utf8(e.text, where, e.line);
    };
    struct Open {
        pugi::xml_node node;
        XmlElement* element;
        std::size_t depth;
    };
    XmlElement top;
    fill(top, root);
    std::vector<Open> stack{{root, &top, 1}};
    while (!stack.empty()) {
        const Open open = stack.back();
        stack.pop_back();
        std::vector<pugi::xml_node> elements;
        for (pugi::xml_node c : open.node.children())
            if (c.type() == pugi::node_element) elements.push_back(c);
        if (elements.empty()) continue;
        if (open.depth + 1 > max_depth)
            throw InputError(
                where + ":" + std::to_string(line_at(text, elements.front().offset_debug())),
                "elements nested deeper than " + std::to_string(max_depth));
        open.element->children.resize(elements.size());
        for (std::size_t i = 0; i < elements.size(); ++i) {
            fill(open.element->children[i], elements[i]);
            stack.push_back({elements[i], &open.element->children[i], open.depth + 1});
        }
    }
    return top;
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
