#pragma once
// XML for Pascal VOC annotations: pugixml parses (elements, attributes, text, comments, CDATA,
// the XML declaration); a DOCTYPE is skipped and no entity besides the five predefined ones and
// character references is expanded (no entity bombs, no external files: an unknown &name;
// stays as written). The result is a small tree built without recursion and depth-limited;
// text must be UTF-8; errors name "file:line".
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace crucible::data {

struct XmlElement {
    std::string name;
    std::vector<std::pair<std::string, std::string>> attributes;
    std::string text;  // the element's own text (entities decoded), children's text excluded
    std::vector<XmlElement> children;
    int line = 0;

    const XmlElement* child(std::string_view name) const;  // first child of that name, or null
    std::vector<const XmlElement*> children_named(std::string_view name) const;
    // Trimmed text of the first child of that name; "" when absent.
    std::string child_text(std::string_view name) const;
};

// Throws InputError("<where>:<line>", ...) on malformed input.
XmlElement parse_xml(std::string_view text, const std::string& where, std::size_t max_depth = 64);

// Escapes &, <, >, " and ' for text and attribute values.
std::string xml_escape(std::string_view text);

}  // namespace crucible::data
