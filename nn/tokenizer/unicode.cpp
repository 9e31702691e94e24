// nn/tokenizer/unicode.cpp — UTF-8 checks and repair (WHATWG's decoder rule, which node's
// TextDecoder and fs.readFileSync(f, "utf8") follow), and GPT-2's byte-to-unicode map.
// Deliberately not here: character classes (PCRE2 owns \p{L}, \p{N}; pretokenize.cpp).
#include "nn/tokenizer/detail.hpp"

namespace tg::nn::tokenizer_detail {

namespace {

// One step of the WHATWG UTF-8 decoder at s[i]: the length of a valid sequence, or -(bytes
// consumed before the error) for an invalid one (at least one byte is always consumed).
int sequence_at(std::string_view s, size_t i) {
  const auto b = static_cast<unsigned char>(s[i]);
  if (b < 0x80) return 1;
  int need = 0;
  unsigned lower = 0x80, upper = 0xBF;
  if (b >= 0xC2 && b <= 0xDF) {
    need = 1;
  } else if (b >= 0xE0 && b <= 0xEF) {
    need = 2;
    if (b == 0xE0) lower = 0xA0;
    if (b == 0xED) upper = 0x9F;
  } else if (b >= 0xF0 && b <= 0xF4) {
    need = 3;
    if (b == 0xF0) lower = 0x90;
    if (b == 0xF4) upper = 0x8F;
  } else {
    return -1;
  }
  size_t j = i + 1;
  for (int k = 0; k < need; ++k, ++j) {
    if (j >= s.size()) return -static_cast<int>(j - i);
    const auto c = static_cast<unsigned char>(s[j]);
    if (c < lower || c > upper) return -static_cast<int>(j - i);
    lower = 0x80;
    upper = 0xBF;
  }
  return need + 1;
}

}  // namespace

bool is_valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    const int n = sequence_at(s, i);
    if (n < 0) return false;
    i += static_cast<size_t>(n);
  }
  return true;
}

std::string to_valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 16);
  for (size_t i = 0; i < s.size();) {
    const int n = sequence_at(s, i);
    if (n > 0) {
      out.append(s.substr(i, static_cast<size_t>(n)));
      i += static_cast<size_t>(n);
    } else {
      out += "\xEF\xBF\xBD";
      i += static_cast<size_t>(-n);
    }
  }
  return out;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

uint32_t next_code_point(std::string_view s, size_t& i) {
  const auto b = static_cast<unsigned char>(s[i]);
  if (b < 0x80) {
    ++i;
    return b;
  }
  const int n = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : 2;
  uint32_t cp = b & (0x7F >> n);
  for (int k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  i += static_cast<size_t>(n);
  return cp;
}

namespace {

// bytes_to_unicode() of OpenAI's encoder.py: printable Latin-1 bytes stand for themselves, the
// other 68 bytes take U+0100 onwards in byte order.
struct ByteMap {
  std::array<std::string, 256> to_unicode;
  std::array<int, 324> to_byte{};
  ByteMap() {
    to_byte.fill(-1);
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      const uint32_t cp = printable ? static_cast<uint32_t>(b) : 256u + static_cast<uint32_t>(n++);
      append_utf8(to_unicode[static_cast<size_t>(b)], cp);
      to_byte[cp] = b;
    }
  }
};

const ByteMap& byte_map() {
  static const ByteMap m;
  return m;
}

}  // namespace

const std::array<std::string, 256>& byte_to_unicode() { return byte_map().to_unicode; }

int unicode_to_byte(uint32_t cp) {
  return cp < byte_map().to_byte.size() ? byte_map().to_byte[cp] : -1;
}

bool byte_level_to_raw(std::string_view token, std::string& raw) {
  raw.clear();
  for (size_t i = 0; i < token.size();) {
    const int b = unicode_to_byte(next_code_point(token, i));
    if (b < 0) return false;
    raw += static_cast<char>(b);
  }
  return true;
}

bool is_js_space(uint32_t cp) {
  switch (cp) {
    case 0x09:
    case 0x0A:
    case 0x0B:
    case 0x0C:
    case 0x0D:
    case 0x20:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
    case 0xFEFF:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

}  // namespace tg::nn::tokenizer_detail
