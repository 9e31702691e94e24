// examples/text_classification/email.cpp — raw email -> classifier text: header parsing with
// unfolding, MIME multipart walking, quoted-printable / base64 decoding, HTML stripping, RFC 2047
// subjects. See email.hpp for what is kept and what is dropped.
#include "text_classification/email.hpp"

#include "common/text.hpp"

#include <cctype>
#include <cstdint>
#include <map>
#include <vector>

namespace tgx::cls {
namespace {

constexpr int kMaxDepth = 8;  // nested multiparts deeper than this are read as plain text

struct Part {
  std::map<std::string, std::string> headers;  // lower-case name -> unfolded value (first wins)
  std::string_view body;
};

std::string lower(std::string_view s) { return to_lower_ascii(std::string(s)); }

// A header line is "Name: value" with a printable, space-free name.
bool is_header_line(std::string_view line, size_t* colon) {
  size_t c = line.find(':');
  if (c == std::string_view::npos || c == 0) return false;
  for (size_t i = 0; i < c; ++i) {
    unsigned char ch = static_cast<unsigned char>(line[i]);
    if (ch <= 32 || ch >= 127) return false;
  }
  *colon = c;
  return true;
}

// Splits headers from body. Headers end at the first blank line, or at the first line that is
// neither a header nor a continuation (mail without the blank line keeps that line in the body).
Part parse_part(std::string_view raw) {
  Part p;
  size_t pos = 0;
  std::string* last = nullptr;
  bool in_headers = false;
  if (starts_with(raw, "From "))
    pos = raw.find('\n') == std::string_view::npos ? raw.size()
                                                   : raw.find('\n') + 1;  // mbox separator line
  while (pos < raw.size()) {
    size_t end = raw.find('\n', pos);
    size_t next = end == std::string_view::npos ? raw.size() : end + 1;
    std::string_view line = raw.substr(pos, next - pos);
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
    size_t colon = 0;
    if (line.empty()) {
      pos = next;
      break;
    }
    if ((line[0] == ' ' || line[0] == '\t') && in_headers) {
      if (last) *last += ' ' + trim(line);  // folded line (of a repeated header: dropped)
    } else if (is_header_line(line, &colon)) {
      std::string name = lower(line.substr(0, colon));
      auto [it, fresh] = p.headers.emplace(name, trim(line.substr(colon + 1)));
      last = fresh ? &it->second : nullptr;
      in_headers = true;
    } else {
      break;  // not a header: the body starts here
    }
    pos = next;
  }
  p.body = raw.substr(std::min(pos, raw.size()));
  return p;
}

std::string header(const Part& p, const std::string& name) {
  auto it = p.headers.find(name);
  return it == p.headers.end() ? std::string() : it->second;
}

// "multipart/mixed; boundary="abc"" -> type "multipart/mixed", boundary "abc".
std::string content_type(const Part& p, std::string* boundary) {
  std::string v = header(p, "content-type");
  std::string type = lower(trim(v.substr(0, v.find(';'))));
  std::string lv = lower(v);
  size_t b = lv.find("boundary=");
  if (b != std::string::npos) {
    size_t s = b + 9;
    if (s < v.size() && v[s] == '"') {
      size_t e = v.find('"', s + 1);
      *boundary = v.substr(s + 1, e == std::string::npos ? std::string::npos : e - s - 1);
    } else {
      size_t e = v.find_first_of("; \t", s);
      *boundary = v.substr(s, e == std::string::npos ? std::string::npos : e - s);
    }
  }
  return type;
}

// The parts between "--boundary" delimiter lines; false when no delimiter line is present.
bool split_multipart(std::string_view body, const std::string& boundary,
                     std::vector<std::string_view>* parts) {
  const std::string delim = "--" + boundary;
  size_t pos = 0, part_start = std::string_view::npos;
  bool found = false;
  while (pos < body.size()) {
    size_t end = body.find('\n', pos);
    size_t next = end == std::string_view::npos ? body.size() : end + 1;
    std::string_view line = body.substr(pos, next - pos);
    if (starts_with(line, delim)) {
      std::string rest = trim(line.substr(delim.size()));
      if (rest.empty() || rest == "--") {
        if (part_start != std::string_view::npos)
          parts->push_back(body.substr(part_start, pos - part_start));
        found = true;
        part_start = rest == "--" ? std::string_view::npos : next;
        if (rest == "--") break;
      }
    }
    pos = next;
  }
  if (part_start != std::string_view::npos && part_start < body.size())
    parts->push_back(body.substr(part_start));  // unterminated last part: keep it
  return found;
}

std::string decode_body(std::string_view body, const std::string& encoding) {
  if (encoding == "quoted-printable") return decode_quoted_printable(body);
  if (encoding == "base64") return decode_base64(body);
  return std::string(body);
}

bool looks_like_html(std::string_view s) {
  std::string head = lower(s.substr(0, 4000));
  return head.find("<html") != std::string::npos || head.find("<body") != std::string::npos ||
         head.find("<br") != std::string::npos || head.find("<p>") != std::string::npos;
}

std::string text_of(const Part& p, int depth);

std::string text_of_multipart(const Part& p, const std::string& boundary, int depth) {
  std::vector<std::string_view> parts;
  if (boundary.empty() || depth >= kMaxDepth || !split_multipart(p.body, boundary, &parts)) {
    // Broken multipart: read the body as text so nothing is silently lost.
    std::string t = latin1_fallback_to_utf8(p.body);
    return looks_like_html(t) ? strip_html(t) : t;
  }
  std::string out;
  for (std::string_view raw : parts) {
    std::string t = text_of(parse_part(raw), depth + 1);
    if (!t.empty()) out += t + "\n";
  }
  return out;
}

std::string text_of(const Part& p, int depth) {
  std::string boundary;
  std::string type = content_type(p, &boundary);
  if (starts_with(type, "multipart/")) return text_of_multipart(p, boundary, depth);
  if (type == "message/rfc822" && depth < kMaxDepth) return text_of(parse_part(p.body), depth + 1);
  if (!type.empty() && type != "text/plain" && type != "text/html" && type != "text")
    return "";  // attachments, images, ...
  std::string encoding = lower(trim(header(p, "content-transfer-encoding")));
  std::string text = latin1_fallback_to_utf8(decode_body(p.body, encoding));
  if (type == "text/html" || looks_like_html(text)) return strip_html(text);
  return text;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return;
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

// "&amp;" / "&#233;" / "&#xE9;" at s[i]; appends the character and returns the length consumed,
// or 0 when it is not an entity we know.
size_t decode_entity(std::string_view s, size_t i, std::string& out) {
  static const std::map<std::string, uint32_t> named = {
      {"amp", '&'},    {"lt", '<'},       {"gt", '>'},       {"quot", '"'},     {"apos", '\''},
      {"nbsp", ' '},   {"copy", 0xA9},    {"reg", 0xAE},     {"trade", 0x2122}, {"euro", 0x20AC},
      {"pound", 0xA3}, {"mdash", 0x2014}, {"ndash", 0x2013}, {"hellip", 0x2026}};
  size_t semi = s.find(';', i);
  if (semi == std::string_view::npos || semi - i > 10 || semi == i + 1) return 0;
  std::string name(s.substr(i + 1, semi - i - 1));
  uint32_t cp = 0;
  if (name[0] == '#') {
    bool hex = name.size() > 1 && (name[1] == 'x' || name[1] == 'X');
    std::string digits = name.substr(hex ? 2 : 1);
    if (digits.empty()) return 0;
    for (char c : digits) {
      int v = hex ? hex_value(c) : (std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : -1);
      if (v < 0) return 0;
      cp = cp * (hex ? 16 : 10) + static_cast<uint32_t>(v);
      if (cp > 0x10FFFF) return 0;
    }
  } else {
    auto it = named.find(lower(name));
    if (it == named.end()) return 0;
    cp = it->second;
  }
  append_utf8(out, cp);
  return semi - i + 1;
}

// Skips from s[i] == '<' past the matching end of a tag, comment or script/style block.
size_t skip_markup(std::string_view s, size_t i, const std::string& ls) {
  if (s.compare(i, 4, "<!--") == 0) {
    size_t e = s.find("-->", i + 4);
    return e == std::string_view::npos ? s.size() : e + 3;
  }
  for (const char* block : {"script", "style"}) {
    if (ls.compare(i + 1, std::char_traits<char>::length(block), block) == 0) {
      size_t e = ls.find(std::string("</") + block, i);
      if (e == std::string::npos) return s.size();
      size_t gt = s.find('>', e);
      return gt == std::string_view::npos ? s.size() : gt + 1;
    }
  }
  size_t gt = s.find('>', i);
  return gt == std::string_view::npos ? s.size() : gt + 1;
}

}  // namespace

std::string decode_quoted_printable(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '=') {
      out += s[i];
      continue;
    }
    if (i + 1 < s.size() && s[i + 1] == '\n') {  // soft line break
      i += 1;
    } else if (i + 2 < s.size() && s[i + 1] == '\r' && s[i + 2] == '\n') {
      i += 2;
    } else if (i + 2 < s.size() && hex_value(s[i + 1]) >= 0 && hex_value(s[i + 2]) >= 0) {
      out += static_cast<char>(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2]));
      i += 2;
    } else {
      out += '=';  // a lone '=' is kept as written
    }
  }
  return out;
}

std::string decode_base64(std::string_view s) {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : s) {
    int v = -1;
    if (c >= 'A' && c <= 'Z')
      v = c - 'A';
    else if (c >= 'a' && c <= 'z')
      v = c - 'a' + 26;
    else if (c >= '0' && c <= '9')
      v = c - '0' + 52;
    else if (c == '+')
      v = 62;
    else if (c == '/')
      v = 63;
    else if (c == '=')
      break;
    if (v < 0) continue;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  return out;
}

std::string strip_html(std::string_view s) {
  std::string ls = lower(s), out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    char c = s[i];
    bool tag_start = c == '<' && i + 1 < s.size() &&
                     (std::isalpha(static_cast<unsigned char>(s[i + 1])) || s[i + 1] == '/' ||
                      s[i + 1] == '!' || s[i + 1] == '?');
    if (tag_start) {
      i = skip_markup(s, i, ls);
      out += ' ';
    } else if (c == '&') {
      size_t n = decode_entity(s, i, out);
      if (n == 0) out += c;
      i += n == 0 ? 1 : n;
    } else {
      out += c;
      ++i;
    }
  }
  return out;
}

std::string decode_header_words(std::string_view v) {
  std::string out;
  size_t i = 0;
  bool prev_encoded = false;
  while (i < v.size()) {
    size_t start = v.find("=?", i);
    size_t q1 = start == std::string_view::npos ? start : v.find('?', start + 2);
    size_t q2 = q1 == std::string_view::npos ? q1 : v.find('?', q1 + 1);
    size_t end = q2 == std::string_view::npos ? q2 : v.find("?=", q2 + 1);
    if (end == std::string_view::npos || q2 != q1 + 2) {
      out += v.substr(i);
      break;
    }
    std::string_view between = v.substr(i, start - i);
    if (!(prev_encoded && trim(between).empty())) out += between;  // RFC 2047 §6.2
    char enc = static_cast<char>(std::toupper(static_cast<unsigned char>(v[q1 + 1])));
    std::string_view text = v.substr(q2 + 1, end - q2 - 1);
    if (enc == 'B') {
      out += decode_base64(text);
    } else {
      std::string t(text);
      for (char& ch : t)
        if (ch == '_') ch = ' ';
      out += decode_quoted_printable(t);
    }
    prev_encoded = true;
    i = end + 2;
  }
  return latin1_fallback_to_utf8(out);
}

std::string email_to_text(std::string_view raw, const std::vector<std::string>& headers) {
  Part top = parse_part(raw);
  std::string lines;
  for (const std::string& h : headers) {  // "from: Jane <jane@example.com>\n" per wanted header
    std::string v = squeeze_spaces(decode_header_words(header(top, lower(h))));
    if (!v.empty()) lines += lower(h) + ": " + v + "\n";
  }
  std::string subject = squeeze_spaces(decode_header_words(header(top, "subject")));
  std::string body = squeeze_spaces(text_of(top, 0));
  return lines + subject + "\n" + body;
}

}  // namespace tgx::cls
