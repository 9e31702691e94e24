// examples/common/fortunes.hpp — reading Debian's `fortunes` files, shared by the classifier
// (one class per file) and the GPT (the files as a text corpus): items separated by lines
// holding only '%', backspace overstrikes resolved, and where the package lives.
//
// Not here: what each example does with the items (whitespace squeezing, joining, splits).
#pragma once

#include <string>
#include <vector>

namespace tgx {

// Where the `fortunes` package puts its files.
inline constexpr const char* kFortunesDir = "/usr/share/games/fortunes";

// Resolves backspace overstrikes in one piece of text, line by line like a line printer: a
// character, backspaces, another one printed on top ("_\bX" and "X\b_" -> X, "X\bX" -> X).
std::string resolve_overstrikes(const std::string& text);

// One fortune file's items, each with its overstrikes resolved and otherwise as written (lines,
// indentation, the trailing newline); items holding only whitespace are dropped. A separator is
// a line holding exactly one '%' (and optional surrounding whitespace); "100%" is text. `what`
// names the file in errors: UserError when the text is not valid UTF-8.
std::vector<std::string> fortune_items(const std::string& text, const std::string& what);

}  // namespace tgx
