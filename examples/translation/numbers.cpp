// examples/translation/numbers.cpp — English and French number words (num2words' rules) and
// the word tokeniser. English: "and" joins hundreds to a remainder, "thousand and" to a
// remainder under 100, "thousand," to one of 100 or more. French: "et un" / "et onze" for 21 … 71
// (not 81, 91), "quatre-vingts" and "N cents" take their "s" only at the very end of the number,
// "mille" never does and "un mille" is just "mille".
#include "translation/numbers.hpp"

#include "common/cli.hpp"

#include <fmt/format.h>

namespace tgx::translation {

namespace {

const char* const kEnUnits[] = {"zero",    "one",     "two",       "three",    "four",
                                "five",    "six",     "seven",     "eight",    "nine",
                                "ten",     "eleven",  "twelve",    "thirteen", "fourteen",
                                "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"};
const char* const kEnTens[] = {"",      "",      "twenty",  "thirty", "forty",
                               "fifty", "sixty", "seventy", "eighty", "ninety"};

const char* const kFrUnits[] = {"zéro",   "un",    "deux",     "trois",    "quatre",
                                "cinq",   "six",   "sept",     "huit",     "neuf",
                                "dix",    "onze",  "douze",    "treize",   "quatorze",
                                "quinze", "seize", "dix-sept", "dix-huit", "dix-neuf"};
const char* const kFrTens[] = {"",          "",         "vingt",    "trente",       "quarante",
                               "cinquante", "soixante", "soixante", "quatre-vingt", "quatre-vingt"};

void check_range(int64_t n, const char* what) {
  if (n < 0 || n > kMaxNumber)
    throw UserError(fmt::format("{}: {} is out of range [0, {}]", what, n, kMaxNumber));
}

// 0 < n < 100.
std::string english_below_100(int64_t n) {
  if (n < 20) return kEnUnits[n];
  std::string s = kEnTens[n / 10];
  if (n % 10) s += std::string("-") + kEnUnits[n % 10];
  return s;
}

// 0 < n < 1000.
std::string english_below_1000(int64_t n) {
  if (n < 100) return english_below_100(n);
  std::string s = std::string(kEnUnits[n / 100]) + " hundred";
  if (n % 100) s += " and " + english_below_100(n % 100);
  return s;
}

// 0 < n < 100; `final` is true when nothing follows (quatre-vingts takes its "s" only then).
std::string french_below_100(int64_t n, bool final) {
  if (n < 20) return kFrUnits[n];
  int64_t tens = n / 10, unit = n % 10;
  if (tens == 7 || tens == 9) {  // soixante-dix …, quatre-vingt-dix …
    int64_t rest = 10 + unit;
    if (tens == 7 && unit == 1) return "soixante et onze";
    return std::string(kFrTens[tens]) + "-" + kFrUnits[rest];
  }
  if (unit == 0) return tens == 8 && final ? "quatre-vingts" : kFrTens[tens];
  if (unit == 1 && tens != 8) return std::string(kFrTens[tens]) + " et un";
  return std::string(kFrTens[tens]) + "-" + kFrUnits[unit];
}

// 0 < n < 1000.
std::string french_below_1000(int64_t n, bool final) {
  int64_t h = n / 100, rest = n % 100;
  if (h == 0) return french_below_100(rest, final);
  std::string s = h == 1 ? "cent" : std::string(kFrUnits[h]) + " cent";
  if (rest == 0) return h > 1 && final ? s + "s" : s;
  return s + " " + french_below_100(rest, final);
}

}  // namespace

std::string english_words(int64_t n) {
  check_range(n, "english_words");
  if (n == 0) return "zero";
  int64_t thousands = n / 1000, low = n % 1000;
  if (thousands == 0) return english_below_1000(low);
  std::string s = english_below_1000(thousands) + " thousand";
  if (low == 0) return s;
  return s + (low < 100 ? " and " : ", ") + english_below_1000(low);
}

std::string french_words(int64_t n) {
  check_range(n, "french_words");
  if (n == 0) return "zéro";
  int64_t thousands = n / 1000, low = n % 1000;
  std::string s;
  if (thousands > 0) s = thousands == 1 ? "mille" : french_below_1000(thousands, false) + " mille";
  if (low == 0) return s;
  return (s.empty() ? "" : s + " ") + french_below_1000(low, true);
}

std::vector<std::string> tokenize_words(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  auto flush = [&] {
    if (!cur.empty()) out.push_back(cur);
    cur.clear();
  };
  for (char c : text) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      flush();
    } else if (c == '-' || c == ',') {
      flush();
      out.push_back(std::string(1, c));
    } else {
      cur += c;
    }
  }
  flush();
  return out;
}

std::string detokenize_words(const std::vector<std::string>& tokens) {
  std::string s;
  bool glue = true;  // no space before the next token
  for (const std::string& t : tokens) {
    if (t == "-") {
      s += t;
      glue = true;
      continue;
    }
    if (!glue && t != ",") s += ' ';
    s += t;
    glue = false;
  }
  return s;
}

}  // namespace tgx::translation
