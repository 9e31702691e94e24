// examples/common/text.hpp — text helpers the examples share: UTF-8 validation and code point
// splitting, reading whole files with messages that name the file (and the command that
// installs a missing dataset), and small string utilities.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace tgx {

// True when s is well-formed UTF-8 (no overlongs, no surrogates, nothing above U+10FFFF).
// On false, *bad_offset (when given) is the byte offset of the first bad sequence.
bool is_valid_utf8(std::string_view s, size_t* bad_offset = nullptr);
// Throws UserError "<what>: not valid UTF-8 at byte N (...)" unless s is valid UTF-8.
void require_utf8(std::string_view s, const std::string& what);
// Bytes that are not valid UTF-8 are read as Latin-1 (legacy mail); valid UTF-8 is kept as is.
std::string latin1_fallback_to_utf8(std::string_view s);
// The code points of a valid UTF-8 string, one string each.
std::vector<std::string> utf8_chars(std::string_view s);

// Reads a whole file. Missing or unreadable -> UserError naming the path, followed by
// install_hint when it is not empty (e.g. "install it with: sudo apt-get install fortunes").
std::string read_file(const std::string& path, const std::string& install_hint = "");
bool file_exists(const std::string& path);
bool dir_exists(const std::string& path);
// Regular files in dir (not recursive), sorted by name.
std::vector<std::string> list_files(const std::string& dir);

std::string to_lower_ascii(std::string s);
std::string trim(std::string_view s);
// Collapses runs of whitespace to one space and trims.
std::string squeeze_spaces(std::string_view s);
bool starts_with(std::string_view s, std::string_view prefix);

}  // namespace tgx
