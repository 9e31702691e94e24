// examples/text_classification/email.hpp — turns one raw RFC 822 email into the text the
// classifier reads: the Subject line's text first, then the body's human-readable text.
//
// Headers are dropped (except Subject, which is highly informative; RFC 2047 encoded words in it
// are decoded). MIME multipart bodies are walked (nested too) and only text/plain and text/html
// parts are kept; quoted-printable and base64 parts are decoded; HTML loses its tags, comments,
// <script>/<style> contents and entities. Bytes that are not valid UTF-8 (legacy mail in Latin-1
// or Windows-1252) are read as Latin-1 (tgx::latin1_fallback_to_utf8), so the result is always
// valid UTF-8. Whitespace is collapsed to single spaces; the subject is separated from the body
// by one newline. Malformed mail (no blank line after the headers, a boundary that never
// appears, bad base64) never throws: whatever text can be recovered is kept.
// Deliberately not here: charsets other than UTF-8 / Latin-1, attachments, the data set layout
// (data.hpp).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tgx::cls {

// The classifier's text for one raw email: "<subject>\n<body text>", after one line
// "<name>: <value>" per header named in `headers` that the email has (e.g. from, x-mailer,
// content-type; names case-insensitive, values decoded like Subject).
std::string email_to_text(std::string_view raw, const std::vector<std::string>& headers = {});

// Building blocks (exposed for tests).
std::string decode_quoted_printable(std::string_view s);
// Skips characters outside the base64 alphabet; stops at '=' padding; never throws.
std::string decode_base64(std::string_view s);
// Removes tags, comments, <script>/<style> blocks; decodes entities (named basics and numeric).
std::string strip_html(std::string_view html);
// Decodes RFC 2047 encoded words (=?charset?B?...?= and =?charset?Q?...?=) in a header value.
std::string decode_header_words(std::string_view value);

}  // namespace tgx::cls
