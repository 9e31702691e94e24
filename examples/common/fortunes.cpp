// examples/common/fortunes.cpp — the fortune-file parser and overstrike resolution (see
// fortunes.hpp).
#include "common/fortunes.hpp"

#include "common/text.hpp"

#include <algorithm>

namespace tgx {

std::string resolve_overstrikes(const std::string& text) {
  std::string out;
  std::vector<std::string> cells;  // the current line, one code point per cell
  size_t cursor = 0;
  auto flush = [&] {
    for (const std::string& c : cells) out += c;
    cells.clear();
    cursor = 0;
  };
  for (const std::string& ch : utf8_chars(text)) {
    if (ch == "\n") {
      flush();
      out += '\n';
    } else if (ch == "\b") {
      if (cursor > 0) --cursor;
    } else if (cursor < cells.size()) {
      // Printed on top: an underline keeps the letter under it; otherwise the new one wins.
      if (ch != "_") cells[cursor] = ch;
      ++cursor;
    } else {
      cells.push_back(ch);
      ++cursor;
    }
  }
  flush();
  return out;
}

std::vector<std::string> fortune_items(const std::string& text, const std::string& what) {
  require_utf8(text, what);
  std::vector<std::string> items;
  std::string cur;
  auto finish = [&] {
    std::string t = resolve_overstrikes(cur);
    if (!trim(t).empty()) items.push_back(std::move(t));
    cur.clear();
  };
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    size_t next = end == std::string::npos ? text.size() : end + 1;
    std::string line = text.substr(pos, next - pos);
    if (trim(line) == "%")
      finish();
    else
      cur += line;
    pos = next;
  }
  finish();
  return items;
}

}  // namespace tgx
