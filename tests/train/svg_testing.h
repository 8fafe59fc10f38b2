// Reading back the SVG the toolkit writes, to test what a picture shows (not only that a file
// exists): a small XML reader that checks the tags nest and close, and lists every element with
// its attributes and text.
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <map>
#include <string>
#include <vector>

namespace sg::testing {

struct SvgElement {
  std::string name;
  std::map<std::string, std::string> attributes;
  std::string text;  // the element's own text, unescaped (a <title>'s, a <text>'s)
  std::string parent;
  std::string attribute(const std::string& key) const {
    auto it = attributes.find(key);
    return it == attributes.end() ? "" : it->second;
  }
  double number(const std::string& key) const { return std::stod(attributes.at(key)); }
};

inline std::string xml_unescape(std::string s) {
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&amp;", "&"}}) {
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
      s.replace(at, from.size(), to);
    }
  }
  return s;
}

// Every element in document order; a failed expectation when tags do not nest or close, or the
// document is not one <svg> element. (Written by hand rather than with std::regex, whose
// backtracking recurses once per character: a chart's points attribute would overflow the stack.)
inline std::vector<SvgElement> parse_svg(const std::string& svg) {
  std::vector<SvgElement> out;
  std::vector<size_t> open;  // indices into out of the elements not closed yet
  auto is_name = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
  };
  size_t i = 0;
  while (true) {
    const size_t lt = svg.find('<', i);
    if (!open.empty()) out[open.back()].text += xml_unescape(svg.substr(i, lt - i));
    if (lt == std::string::npos) break;
    const size_t gt = svg.find('>', lt);
    EXPECT_NE(gt, std::string::npos) << "a tag is not closed";
    if (gt == std::string::npos) return out;
    std::string tag = svg.substr(lt + 1, gt - lt - 1);
    i = gt + 1;
    if (tag.starts_with("/")) {
      EXPECT_FALSE(open.empty()) << "<" << tag << "> closes nothing";
      if (open.empty()) return out;
      EXPECT_EQ("/" + out[open.back()].name, tag) << "tags do not nest";
      open.pop_back();
      continue;
    }
    const bool self_closing = tag.ends_with("/");
    if (self_closing) tag.pop_back();
    size_t k = 0;
    while (k < tag.size() && is_name(tag[k])) ++k;
    SvgElement e{tag.substr(0, k), {}, "", open.empty() ? "" : out[open.back()].name};
    EXPECT_FALSE(e.name.empty()) << "a tag without a name: <" << tag << ">";
    while (true) {  // attributes: name="value", separated by spaces
      while (k < tag.size() && tag[k] == ' ') ++k;
      if (k == tag.size()) break;
      const size_t eq = tag.find("=\"", k);
      const size_t close = eq == std::string::npos ? eq : tag.find('"', eq + 2);
      EXPECT_NE(close, std::string::npos) << "a malformed attribute in <" << tag << ">";
      if (close == std::string::npos) break;
      e.attributes[tag.substr(k, eq - k)] = xml_unescape(tag.substr(eq + 2, close - eq - 2));
      k = close + 1;
    }
    EXPECT_TRUE(!out.empty() || e.name == "svg") << "the document starts with <" << e.name << ">";
    out.push_back(e);
    if (!self_closing) open.push_back(out.size() - 1);
  }
  EXPECT_TRUE(open.empty()) << open.size() << " elements are not closed";
  return out;
}

// The elements named `name` (and of class `cls`, when given).
inline std::vector<SvgElement> svg_elements(const std::vector<SvgElement>& all,
                                            const std::string& name, const std::string& cls = "") {
  std::vector<SvgElement> out;
  for (const SvgElement& e : all) {
    if (e.name == name && (cls.empty() || e.attribute("class") == cls)) out.push_back(e);
  }
  return out;
}

}  // namespace sg::testing
