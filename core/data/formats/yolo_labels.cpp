#include "core/data/formats/yolo_labels.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>
#include <tuple>

namespace crucible::data {
namespace {

bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

}  // namespace

std::vector<std::string_view> split_label_tokens(std::string_view line) {
    std::vector<std::string_view> tokens;
    std::size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && is_space(line[i]))
            ++i;
        const std::size_t start = i;
        while (i < line.size() && !is_space(line[i]))
            ++i;
        if (i > start) tokens.push_back(line.substr(start, i - start));
    }
    return tokens;
}

namespace {

std::string shown(std::string_view token) {
    std::string out;
    for (char c : token.substr(0, 40)) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u >= 0x7F) {
            static const char* hex = "0123456789abcdef";
            out += "\\x";
            out += hex[u >> 4];
            out += hex[u & 15];
        } else {
            out += c;
        }
    }
    if (token.size() > 40) out += "...";
    return "'" + out + "'";
}

}  // namespace

bool LabelParse::has_error() const {
    return std::any_of(problems.begin(), problems.end(),
                       [](const DatasetProblem& p) { return p.error; });
}

bool parse_label_number(std::string_view token, double& value) {
    if (!token.empty() && token[0] == '+') token.remove_prefix(1);
    if (token.empty()) return false;
    const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
    return ec == std::errc() && end == token.data() + token.size();
}

std::string format_number(double value) {
    char buffer[64];
    const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
    if (ec != std::errc()) return "nan";
    return std::string(buffer, end);
}

std::string format_yolo_row(const Box& b) {
    return std::to_string(b.cls) + " " + format_number(b.cx) + " " + format_number(b.cy) + " " +
           format_number(b.w) + " " + format_number(b.h);
}

LabelParse parse_yolo_labels(std::string_view text, const std::string& where_file,
                             int class_count) {
    LabelParse out;
    if (text.size() >= 3 && text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
    std::set<std::tuple<int, double, double, double, double>> seen;
    std::size_t line_number = 0;
    std::size_t pos = 0;
    auto problem = [&](const std::string& what, bool error = true) {
        out.problems.push_back({where_file + ":" + std::to_string(line_number), what, error});
    };
    while (pos <= text.size()) {
        const std::size_t nl = text.find('\n', pos);
        const std::string_view line =
            text.substr(pos, nl == std::string_view::npos ? text.size() - pos : nl - pos);
        pos = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
        ++line_number;
        const auto tokens = split_label_tokens(line);
        if (tokens.empty()) continue;
        if (out.problems.size() >= 100) {  // a hostile file must not produce millions of messages
            problem("too many problems; the rest of the file is not checked");
            break;
        }
        const std::size_t n = tokens.size();
        if (n != 5 && (n < 7 || n % 2 == 0)) {
            problem(
                "expected 5 values (class cx cy w h) or a polygon (class x1 y1 x2 y2 x3 y3 ...), "
                "found " +
                std::to_string(n));
            continue;
        }
        std::vector<double> values(n);
        bool numbers_ok = true;
        for (std::size_t k = 0; k < n; ++k) {
            if (!parse_label_number(tokens[k], values[k])) {
                problem("value " + std::to_string(k + 1) + " " + shown(tokens[k]) +
                        " is not a number");
                numbers_ok = false;
                break;
            }
            if (!std::isfinite(values[k])) {
                problem("value " + std::to_string(k + 1) + " " + shown(tokens[k]) +
                        " is not a finite number");
                numbers_ok = false;
                break;
            }
        }
        if (!numbers_ok) continue;
        const double cls_value = values[0];
        if (cls_value < 0 || cls_value != std::floor(cls_value) || cls_value > 1e9) {
            problem("class id " + shown(tokens[0]) + " is not a non-negative integer");
            continue;
        }
        const int cls = int(cls_value);
        if (class_count > 0 && cls >= class_count) {
            problem("class id " + std::to_string(cls) + " is unknown (the dataset has " +
                    std::to_string(class_count) + " classes, ids 0.." +
                    std::to_string(class_count - 1) + ")");
            continue;
        }
        bool range_ok = true;
        for (std::size_t k = 1; k < n && range_ok; ++k) {
            if (values[k] < 0) {
                problem("value " + std::to_string(k + 1) + " (" + shown(tokens[k]) +
                        ") is negative");
                range_ok = false;
            } else if (values[k] > 1) {
                problem("coordinate " + std::to_string(k + 1) + " (" + shown(tokens[k]) +
                        ") is above 1 (labels must be normalized to [0, 1])");
                range_ok = false;
            }
        }
        if (!range_ok) continue;
        Box box;
        box.cls = cls;
        if (n == 5) {
            box.cx = values[1];
            box.cy = values[2];
            box.w = values[3];
            box.h = values[4];
        } else {
            double x0 = 1, y0 = 1, x1 = 0, y1 = 0;
            for (std::size_t k = 1; k + 1 < n; k += 2) {
                x0 = std::min(x0, values[k]);
                x1 = std::max(x1, values[k]);
                y0 = std::min(y0, values[k + 1]);
                y1 = std::max(y1, values[k + 1]);
            }
            box.cx = (x0 + x1) / 2;
            box.cy = (y0 + y1) / 2;
            box.w = x1 - x0;
            box.h = y1 - y0;
        }
        if (box.w <= 0 || box.h <= 0) {
            problem("box has zero width or height");
            continue;
        }
        if (!seen.insert({box.cls, box.cx, box.cy, box.w, box.h}).second) {
            problem("duplicate row dropped", false);
            continue;
        }
        out.boxes.push_back(box);
    }
    return out;
}

}  // namespace crucible::data
