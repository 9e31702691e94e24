// tests/examples/text_classification/test_email.cpp — email_to_text and its building blocks:
// headers and Subject, multipart, quoted-printable, base64, HTML, RFC 2047, Latin-1 bytes, and
// malformed mail (no blank line, broken boundary, bad base64) that must not crash.
#include <catch2/catch.hpp>

#include "common/text.hpp"
#include "text_classification/email.hpp"

using tgx::cls::email_to_text;

TEST_CASE("email: headers are dropped and the Subject comes first", "[text_classification]") {
  std::string raw =
      "From someone@example.com  Tue Aug  6 11:51:02 2002\n"
      "Received: from a by b\n\twith SMTP id 1\n"
      "Received: from c\n\tby d with IMAP (fetchmail-5.9.0)\n    for x@y; Thu, 22 Aug 2002\n"
      "Subject: Cheap   meds\n\tfolded part\n"
      "X-Spam: yes\n"
      "\n"
      "Hello   there,\n\nbuy now.\n";
  CHECK(email_to_text(raw) == "Cheap meds folded part\nHello there, buy now.");
}

TEST_CASE("email: mail without a blank line after the headers", "[text_classification]") {
  CHECK(email_to_text("Subject: hi\nthis line is body text\nmore") ==
        "hi\nthis line is body text more");
  CHECK(email_to_text("Subject: only headers\nFrom: x@y") == "only headers\n");
  CHECK(email_to_text("") == "\n");
  CHECK(email_to_text("just a body, no headers at all") == "\njust a body, no headers at all");
}

TEST_CASE("email: multipart keeps text/plain and text/html, decodes QP and base64",
          "[text_classification]") {
  std::string raw =
      "Subject: parts\n"
      "Content-Type: multipart/mixed; boundary=\"XYZ\"\n"
      "\n"
      "preamble is ignored\n"
      "--XYZ\n"
      "Content-Type: text/plain; charset=utf-8\n"
      "Content-Transfer-Encoding: quoted-printable\n"
      "\n"
      "caf=C3=A9 soft=\nbreak a=3Db\n"
      "--XYZ\n"
      "Content-Type: text/html\n"
      "Content-Transfer-Encoding: base64\n"
      "\n"
      "PGI+Qm9sZDwvYj4gJmFtcDsgJmx0O3RhZyZndDsgJiMyMzM7\n"  // <b>Bold</b> &amp; &lt;tag&gt; &#233;
      "--XYZ\n"
      "Content-Type: image/png\n"
      "Content-Transfer-Encoding: base64\n"
      "\n"
      "iVBORw0KGgo=\n"
      "--XYZ--\n"
      "epilogue is ignored\n";
  CHECK(email_to_text(raw) == "parts\ncafé softbreak a=b Bold & <tag> é");
}

TEST_CASE("email: nested multipart/alternative", "[text_classification]") {
  std::string raw =
      "Content-Type: multipart/mixed; boundary=outer\n\n"
      "--outer\n"
      "Content-Type: multipart/alternative; boundary=\"inner\"\n\n"
      "--inner\nContent-Type: text/plain\n\nplain words\n"
      "--inner\nContent-Type: text/html\n\n<p>html&nbsp;words</p>\n"
      "--inner--\n"
      "--outer--\n";
  CHECK(email_to_text(raw) == "\nplain words html words");
}

TEST_CASE("email: a boundary that never appears keeps the body as text", "[text_classification]") {
  std::string raw =
      "Subject: broken\nContent-Type: multipart/alternative; boundary=\"nope\"\n\n"
      "<html><body>Some <i>text</i></body></html>\n";
  CHECK(email_to_text(raw) == "broken\nSome text");
  // A multipart without any boundary parameter, and an unterminated last part.
  CHECK(email_to_text("Content-Type: multipart/mixed\n\nstill here") == "\nstill here");
  CHECK(email_to_text("Content-Type: multipart/mixed; boundary=b\n\n--b\n\nunterminated") ==
        "\nunterminated");
}

TEST_CASE("email: bad base64 and stray '=' decode what they can", "[text_classification]") {
  CHECK(tgx::cls::decode_base64("aGVs*bG8=garbage") == "hello");
  CHECK(tgx::cls::decode_base64("") == "");
  CHECK(tgx::cls::decode_base64("!!!!") == "");
  CHECK(tgx::cls::decode_quoted_printable("a=zz b= c=4") == "a=zz b= c=4");
  std::string raw = "Content-Transfer-Encoding: base64\n\n%%%% not base64 at all\n";
  std::string t = email_to_text(raw);
  CHECK(tgx::is_valid_utf8(t));
}

TEST_CASE("email: bytes that are not UTF-8 are read as Latin-1", "[text_classification]") {
  std::string raw =
      "Subject: Gr\xFC\xDF"
      "e\n\nna\xEFve caf\xE9\n";
  std::string t = email_to_text(raw);
  CHECK(tgx::is_valid_utf8(t));
  CHECK(t == "Grüße\nnaïve café");
  // Valid UTF-8 is kept as is.
  CHECK(email_to_text("Subject: ok\n\ncaf\xC3\xA9") == "ok\ncafé");
}

TEST_CASE("email: RFC 2047 encoded subjects", "[text_classification]") {
  CHECK(tgx::cls::decode_header_words("=?iso-8859-1?Q?Caf=E9_time?= =?utf-8?B?w6k=?= end") ==
        "Café timeé end");
  CHECK(tgx::cls::decode_header_words("=?broken") == "=?broken");
}

TEST_CASE("email: HTML comments, scripts, styles and entities", "[text_classification]") {
  CHECK(tgx::cls::strip_html("a<!-- hidden -->b<script>var x=1;</script>c<STYLE>p{}</STYLE>d") ==
        "a b c d");
  CHECK(tgx::cls::strip_html("x &lt; 3 &unknown; &#x41;&#66; <unclosed") == "x < 3 &unknown; AB  ");
  CHECK(tgx::cls::strip_html("1 < 2") == "1 < 2");
}

TEST_CASE("email: chosen headers are read first, decoded, one line each", "[text_classification]") {
  const std::string raw =
      "From: =?utf-8?Q?Jos=C3=A9?= <jose@example.com>\n"
      "X-Mailer: Mutt 1.2\n"
      "Subject: hello\n"
      "\n"
      "body text\n";
  CHECK(email_to_text(raw) == "hello\nbody text");
  CHECK(email_to_text(raw, {"from", "X-Mailer", "content-type"}) ==
        "from: Jos\xc3\xa9 <jose@example.com>\nx-mailer: Mutt 1.2\nhello\nbody text");
}
