// nn/tokenizer/pretokenize.cpp — the pre-tokenizer regexes on PCRE2 (UTF + UCP, JIT): a pattern
// from tokenizer.json (or GPT-2's) is rewritten the way the JavaScript references read it, then
// the text is cut into matches and the gaps between them (Hugging Face's "Isolated" split).
// Deliberately not here: which regex a tokenizer uses (load.cpp reads it from the file).
#include "nn/tokenizer/detail.hpp"

#include "autograd/tensor.hpp"  // tg::Error

#define PCRE2_CODE_UNIT_WIDTH 8
#include <fmt/format.h>
#include <pcre2.h>

namespace tg::nn::tokenizer_detail {

const char* const kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

namespace {

// JavaScript's \s (ECMAScript WhiteSpace and LineTerminator) as the inside of a class: PCRE2's
// UCP \s also has U+0085 and U+180E and lacks U+FEFF.
constexpr const char* kJsSpace =
    R"(\t\n\x{0B}\f\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF})";

// transformers.js spells Llama-3's case-insensitive contractions without (?i:…), ASCII only
// (PCRE2's caseless match would also take U+017F for 's').
constexpr const char* kCaselessContractions = "(?i:'s|'t|'re|'ve|'m|'ll|'d)";
constexpr const char* kAsciiContractions = "(?:'([sS]|[tT]|[rR][eE]|[vV][eE]|[mM]|[lL][lL]|[dD]))";

std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  pcre2_get_error_message(code, buf, sizeof buf);
  return reinterpret_cast<const char*>(buf);
}

// Per-thread match state: a JIT stack large enough for long runs of one class, match data with
// room for any capture count the patterns here use.
struct MatchState {
  pcre2_jit_stack* stack = nullptr;
  pcre2_match_context* context = nullptr;
  pcre2_match_data* data = nullptr;
  MatchState() {
    stack = pcre2_jit_stack_create(32 * 1024, 64 * 1024 * 1024, nullptr);
    context = pcre2_match_context_create(nullptr);
    pcre2_jit_stack_assign(context, nullptr, stack);
    data = pcre2_match_data_create(32, nullptr);
  }
  ~MatchState() {
    pcre2_match_data_free(data);
    pcre2_match_context_free(context);
    pcre2_jit_stack_free(stack);
  }
};

MatchState& match_state() {
  thread_local MatchState state;
  return state;
}

}  // namespace

std::string js_compatible_pattern(const std::string& pattern) {
  std::string p = pattern;
  for (size_t at; (at = p.find(kCaselessContractions)) != std::string::npos;)
    p.replace(at, std::char_traits<char>::length(kCaselessContractions), kAsciiContractions);
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char e = p[i + 1];
      ++i;
      if (e == 's') {
        out += in_class ? std::string(kJsSpace) : "[" + std::string(kJsSpace) + "]";
      } else if (e == 'S' && !in_class) {
        out += "[^" + std::string(kJsSpace) + "]";
      } else {
        out += c;
        out += e;
      }
      continue;
    }
    if (c == '[' && !in_class) {
      in_class = true;
      out += c;
      if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
      if (i + 1 < p.size() && p[i + 1] == ']') out += p[++i];  // a literal ']' first
      continue;
    }
    if (c == ']' && in_class) in_class = false;
    out += c;
  }
  return out;
}

Regex::Regex(const std::string& pattern, const std::string& where)
    : pattern_(pattern), where_(where) {
  const std::string rewritten = js_compatible_pattern(pattern);
  int code = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* re = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(rewritten.data()), rewritten.size(),
                                 PCRE2_UTF | PCRE2_UCP, &code, &offset, nullptr);
  if (re == nullptr)
    throw Error(fmt::format("Tokenizer: {}: the regex {} does not compile in PCRE2 (at {}): {}",
                            where, pattern, offset, pcre2_message(code)));
  pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);  // without JIT support PCRE2 interprets it
  code_ = re;
}

Regex::~Regex() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

void Regex::split(std::string_view text, std::vector<std::string_view>& pieces) const {
  auto* re = static_cast<pcre2_code*>(code_);
  MatchState& st = match_state();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0, gap = 0;
  while (start <= text.size()) {
    const int rc =
        pcre2_match(re, subject, text.size(), start, PCRE2_NO_UTF_CHECK, st.data, st.context);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0)
      throw Error(fmt::format("Tokenizer: {}: the regex {} failed on a text of {} bytes: {}",
                              where_, pattern_, text.size(), pcre2_message(rc)));
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(st.data);
    const size_t b = ov[0], e = ov[1];
    if (b > gap) pieces.push_back(text.substr(gap, b - gap));
    if (e > b) pieces.push_back(text.substr(b, e - b));
    gap = e;
    if (e > b) {
      start = e;
    } else {  // an empty match: step one code point on, as JavaScript's matchAll does
      if (e >= text.size()) break;
      size_t next = e;
      next_code_point(text, next);
      start = next;
    }
  }
  if (gap < text.size()) pieces.push_back(text.substr(gap));
}

}  // namespace tg::nn::tokenizer_detail
