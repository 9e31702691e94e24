#!/usr/bin/env node
// tools/make_tokenizer_fixtures.js — writes tests/fixtures/tokenizer/cases.json: short texts that
// exercise every branch of the pre-tokenizer regexes, the normaliser, byte fallback, added
// tokens and invalid UTF-8, with the ids and decodes of every reference
// (tools/tokenizer_reference.js). Texts are stored as hex (they hold invalid UTF-8);
// "repaired_hex" is the text as node reads it (invalid sequences -> U+FFFD).
//
//   node tools/make_tokenizer_fixtures.js [OUT_DIR]     (default tests/fixtures/tokenizer)
//
// CASES is also the fragment list tools/compare_tokenizers.js draws its seeded text from.
"use strict";
const fs = require("fs");
const path = require("path");

const b = (hex) => Buffer.from(hex.replace(/ /g, ""), "hex");
const s = (text) => Buffer.from(text, "utf8");

// [name, bytes]
const CASES = [
  ["empty", s("")],
  ["one letter", s("a")],
  ["english", s("The quick brown fox jumps over the lazy dog. It was a bright cold day in April.")],
  ["contractions", s("I'm sure you're right: they've said it's he'd, we'll, don't, can't, 'S 'T 'RE 'LL")],
  ["contractions mixed case", s("IT'S YOU'RE WE'LL He'D i'M 'Re 'vE 'Ll o'clock rock'n'roll")],
  ["numbers", s("7 42 123 2024 31415 271828 1234567 3.14159 1,000,000 0x1F 1e-9 v2.0.1")],
  ["digits in words", s("abc123def 4ever B2B COVID-19 mp3 H2O 1st 22nd 333rd")],
  ["punctuation runs", s("Wait... what?!?! (((nested))) [[x]] {{y}} --- *** ### @@@ &&& %% $$ ~~ ^^ ``` '''")],
  ["whitespace runs", s("a  b   c    d\t\te\t \tf\n\ng\n \n h   \n\n\n")],
  ["trailing spaces", s("line with trailing spaces   \nnext line\t\t\n   ")],
  ["leading spaces", s("   leading spaces and a tab\tand\r\nwindows line ends\r\n")],
  ["only whitespace", s(" \t \n  \n")],
  ["code", s("def f(x):\n    return x**2 + 1  # square\n\nfor (int i = 0; i < n; ++i) {\n\tsum += a[i];\n}\n")],
  ["json and urls", s('{"key": [1, 2.5, null], "url": "https://example.com/a?b=c&d=e#f"} <tag attr="v"/>')],
  ["accents", s("café naïve Zürich São Paulo Ærøskøbing façade crème brûlée Ångström")],
  ["combining marks", s("cafe\u0301 n\u0303 a\u0308\u0301 Z\u0335\u0321a\u0336l\u0337g\u0338o\u0334")],
  ["greek cyrillic", s("Καλημέρα κόσμε — Привет, мир! Ελληνικά и русский")],
  ["arabic hebrew", s("مرحبا بالعالم שלום עולם")],
  ["cjk", s("日本語のテキストです。中文文本，한국어 텍스트。東京タワー")],
  ["indic thai", s("नमस्ते दुनिया สวัสดีชาวโลก")],
  ["emoji", s("emoji 😀 👍🏽 👨‍👩‍👧‍👦 🇫🇷 ❤️ 🤖🎉 ok")],
  ["rare chars byte fallback", s("𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ꙮ 𓀀 ⨌ 🜲 ㋿")],
  ["unicode spaces", s("nbsp\u00a0here ideographic\u3000space en\u2002em\u2003 nel\u0085x bom\ufeffy mvs\u180ez")],
  ["line separators", s("a\u2028b\u2029c\u000bd\u000ce")],
  ["long s contraction", s("it'ſ odd 'ſ and 'K 'k")],
  ["sentencepiece marker", s("a \u2581 b \u2581\u2581c")],
  ["byte tokens as text", s("<0x41> <0xFF> <0x0A>")],
  ["gpt2 special", s("end of doc<|endoftext|>start of next<|endoftext|><|endoftext|>")],
  ["llama2 specials", s("<s>Hello</s> <unk> </s><s>")],
  ["llama3 specials", s("<|begin_of_text|>Hi<|end_of_text|> <|reserved_special_token_0|>x<|eot_id|>")],
  ["special token prefixes", s("<|endoftext <s <|begin_of_text| </s")],
  ["invalid lone bytes", b("61 ff 62 fe 63 80 64")],
  ["invalid truncated", b("e2 82 20 f0 9f 98 20 c3")],
  ["invalid overlong surrogate", b("c0 af 20 ed a0 80 20 f4 90 80 80 20 e0 80 af")],
  ["latin1 bytes", b("63 61 66 e9 20 6e 61 ef 76 65 0a")],
  ["very long word", s("a".repeat(300) + " " + "ab".repeat(200))],
  ["long number", s("1234567890".repeat(12))],
];

function hex(buf) { return buf.toString("hex"); }

function main() {
  const outDir = process.argv[2] || path.join(__dirname, "..", "tests", "fixtures", "tokenizer");
  const { refs, versions } = require("./tokenizer_reference.js").loadReferences();
  const cases = CASES.map(([name, bytes]) => {
    const text = bytes.toString("utf8");
    const c = { name, hex: hex(bytes), repaired_hex: hex(Buffer.from(text, "utf8")) };
    for (const [ref, r] of Object.entries(refs)) {
      c[ref] = r.encode(text, false);
      if (ref !== "gpt2") c[ref + "_special"] = r.encode(text, true);
      c[ref + "_decoded_hex"] = hex(Buffer.from(r.decode(c[ref]), "utf8"));
    }
    return c;
  });
  fs.mkdirSync(outDir, { recursive: true });
  const json = JSON.stringify({ versions, cases }, null, 0).replace(/\},\{"name"/g, '},\n{"name"');
  fs.writeFileSync(path.join(outDir, "cases.json"), json + "\n");
  console.log(`wrote ${cases.length} cases to ${path.join(outDir, "cases.json")}`);
}

module.exports = { CASES };

if (require.main === module) main();
