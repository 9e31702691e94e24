// examples/common/text.cpp — UTF-8 checks, file reading with clear messages, string helpers.
#include "common/text.hpp"

#include "common/cli.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace tgx {

namespace {
// Length of the well-formed UTF-8 sequence starting at s[i], or 0 when it is malformed.
size_t utf8_seq_len(std::string_view s, size_t i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  if (c < 0x80) return 1;
  size_t n = 0;
  uint32_t cp = 0;
  if (c >= 0xC2 && c <= 0xDF)
    n = 2, cp = c & 0x1F;
  else if (c >= 0xE0 && c <= 0xEF)
    n = 3, cp = c & 0x0F;
  else if (c >= 0xF0 && c <= 0xF4)
    n = 4, cp = c & 0x07;
  else
    return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF))) return 0;
  if (cp >= 0xD800 && cp <= 0xDFFF) return 0;
  return n;
}
}  // namespace

bool is_valid_utf8(std::string_view s, size_t* bad_offset) {
  for (size_t i = 0; i < s.size();) {
    size_t n = utf8_seq_len(s, i);
    if (n == 0) {
      if (bad_offset) *bad_offset = i;
      return false;
    }
    i += n;
  }
  return true;
}

void require_utf8(std::string_view s, const std::string& what) {
  size_t at = 0;
  if (is_valid_utf8(s, &at)) return;
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned char>(s[at]));
  throw UserError(what + ": not valid UTF-8 at byte " + std::to_string(at) + " (byte " + hex +
                  "); convert it to UTF-8 first, e.g. with iconv");
}

std::string latin1_fallback_to_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    size_t n = utf8_seq_len(s, i);
    if (n > 0) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      unsigned char c = static_cast<unsigned char>(s[i++]);
      out.push_back(static_cast<char>(0xC0 | (c >> 6)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
  }
  return out;
}

std::vector<std::string> utf8_chars(std::string_view s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    size_t n = utf8_seq_len(s, i);
    if (n == 0) n = 1;  // callers validate first; never loop forever on bad input
    out.emplace_back(s.substr(i, n));
    i += n;
  }
  return out;
}

std::string read_file(const std::string& path, const std::string& install_hint) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw UserError(path + ": is a directory, expected a file");
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    std::string msg =
        path + ": cannot open (" + (file_exists(path) ? "not readable" : "missing") + ")";
    if (!install_hint.empty()) msg += "; " + install_hint;
    throw UserError(msg);
  }
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

bool file_exists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

bool dir_exists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_directory(path, ec);
}

std::vector<std::string> list_files(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(dir, ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file(ec)) out.push_back(it->path().string());
  }
  if (ec) throw UserError(dir + ": cannot list directory (" + ec.message() + ")");
  std::sort(out.begin(), out.end());
  return out;
}

std::string to_lower_ascii(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

std::string squeeze_spaces(std::string_view s) {
  std::string out;
  bool space = false;
  for (char c : s) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = !out.empty();
    } else {
      if (space) out.push_back(' ');
      space = false;
      out.push_back(c);
    }
  }
  return out;
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.substr(0, prefix.size()) == prefix;
}

}  // namespace tgx
