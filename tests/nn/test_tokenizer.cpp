// tests/nn/test_tokenizer.cpp — tg::nn::Tokenizer on tiny hand-written tokenizer.json files (no
// npm package needed): merge order and ties, byte fallback and fused unknowns, the Llama-2
// decoder chain, invalid UTF-8 repaired by WHATWG's rule, the template post-processor, and
// every refusal with its message. The reference parity is test_tokenizer_refs.cpp.
#include <catch2/catch.hpp>

#include "nn/tokenizer/tokenizer.hpp"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

using nlohmann::json;
using tg::nn::Tokenizer;
namespace fs = std::filesystem;

namespace {

// One folder per process (ctest runs the test cases as concurrent processes), removed at exit.
fs::path scratch() {
  struct Folder {
    fs::path path = fs::temp_directory_path() / ("tg_tokenizer_unit_" + std::to_string(getpid()));
    Folder() { fs::create_directories(path); }
    ~Folder() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  };
  static const Folder folder;
  return folder.path;
}

std::string write(const std::string& name, const std::string& text) {
  const fs::path p = scratch() / name;
  std::ofstream(p, std::ios::binary) << text;
  return p.string();
}

// A BPE tokenizer.json over single letters with the given merges (no pre-tokenizer).
json letters_bpe(const json& vocab, const json& merges) {
  return {{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}}},
          {"added_tokens", json::array()}};
}

// SentencePiece style: "▁" normaliser, byte fallback for é, Llama-2's decoder chain.
json sentencepiece_like(bool byte_fallback) {
  json vocab = {{"<unk>", 0}, {"<s>", 1}, {"\u2581", 2}, {"a", 3}, {"\u2581a", 4}, {"b", 5}};
  if (byte_fallback) vocab.update({{"<0xC3>", 6}, {"<0xA9>", 7}});
  return {{"model",
           {{"type", "BPE"},
            {"vocab", vocab},
            {"merges", {"\u2581 a"}},
            {"unk_token", "<unk>"},
            {"byte_fallback", byte_fallback},
            {"fuse_unk", true}}},
          {"added_tokens", {{{"id", 1}, {"content", "<s>"}, {"special", true}}}},
          {"normalizer",
           {{"type", "Sequence"},
            {"normalizers",
             {{{"type", "Prepend"}, {"prepend", "\u2581"}},
              {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}}}}}},
          {"post_processor",
           {{"type", "TemplateProcessing"},
            {"single",
             {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
              {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
            {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}}},
          {"decoder",
           {{"type", "Sequence"},
            {"decoders",
             {{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}},
              {{"type", "ByteFallback"}},
              {{"type", "Fuse"}},
              {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}}}};
}

// Byte-level over every byte (GPT-2's map) with one merge, "a b".
json byte_level_bpe() {
  json vocab = json::object();
  int id = 0, shifted = 0;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    const uint32_t cp =
        printable ? static_cast<uint32_t>(b) : 256u + static_cast<uint32_t>(shifted++);
    std::string s;
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else {
      s += static_cast<char>(0xC0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    }
    vocab[s] = id++;
  }
  vocab["ab"] = id;
  const json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
  return {{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"a b"}}}},
          {"added_tokens", json::array()},
          {"pre_tokenizer", byte_level},
          {"decoder", byte_level}};
}

Tokenizer load(const json& j, const std::string& name = "tokenizer.json") {
  return Tokenizer::from_file(write(name, j.dump()));
}

}  // namespace

TEST_CASE("tokenizer: merges go by rank, ties to the leftmost pair", "[tokenizer]") {
  const json vocab = {{"a", 0}, {"b", 1}, {"aa", 2}, {"ab", 3}, {"aab", 4}, {"ba", 5}};
  const Tokenizer t = load(letters_bpe(vocab, {"a a", "a b", "aa b", "b a"}));
  CHECK(t.encode("aaa") == std::vector<int64_t>{2, 0});  // (a a) leftmost first
  CHECK(t.encode("aaaa") == std::vector<int64_t>{2, 2});
  CHECK(t.encode("aab") == std::vector<int64_t>{4});     // a a -> aa, then aa b
  CHECK(t.encode("bab") == std::vector<int64_t>{1, 3});  // (a b) ranks before (b a)
  CHECK(t.vocab_size() == 6);
  CHECK(t.decode({2, 0}) == "aa a");  // no decoder: tokens joined by spaces, as Hugging Face
}

TEST_CASE("tokenizer: SentencePiece-style normaliser, byte fallback and decoder chain",
          "[tokenizer]") {
  const Tokenizer t = load(sentencepiece_like(true));
  CHECK(t.encode("a\xC3\xA9") == std::vector<int64_t>{4, 6, 7});  // ▁a <0xC3> <0xA9>
  CHECK(t.encode("a a", true) == std::vector<int64_t>{1, 4, 4});
  CHECK(t.decode({4, 6, 7, 4}) == "a\xC3\xA9 a");
  CHECK(t.decode({6, 4}) == "\xEF\xBF\xBD a");  // a lone lead byte decodes to U+FFFD
  CHECK(t.decode({1, 4}) == "<s> a");
  CHECK(t.decode({1, 4}, true) == "a");
  CHECK(t.bos_token_id() == 1);
  CHECK(t.unk_token_id() == 0);
}

TEST_CASE("tokenizer: a token with '▁' after another char keeps the whole section one piece",
          "[tokenizer]") {
  json j = sentencepiece_like(true);
  j["model"]["vocab"]["a\u2581"] = 8;
  j["model"]["merges"] = {"a \u2581", "\u2581 a"};  // a▁ ranks first: it crosses a word start
  const Tokenizer t = load(j);
  CHECK(t.encode("a a") == std::vector<int64_t>{2, 8, 3});  // ▁ a▁ a, not ▁a ▁a
  j["model"]["merges"] = {"\u2581 a", "a \u2581"};
  CHECK(load(j).encode("a a") == std::vector<int64_t>{4, 4});
}

TEST_CASE("tokenizer: without byte fallback unknown chars are one fused <unk>", "[tokenizer]") {
  const Tokenizer t = load(sentencepiece_like(false));
  CHECK(t.encode("a\xC3\xA9\xC3\xA9"
                 "b") == std::vector<int64_t>{4, 0, 5});
}

TEST_CASE("tokenizer: invalid UTF-8 becomes U+FFFD per maximal invalid subsequence (WHATWG)",
          "[tokenizer]") {
  const Tokenizer t = load(byte_level_bpe());
  const std::string fffd = "\xEF\xBF\xBD";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"a\xFF"
       "b",
       "a" + fffd + "b"},
      {"\xE2\x82 ", fffd + " "},                        // truncated 3-byte sequence: one
      {"\xF0\x9F\x98", fffd},                           // truncated 4-byte sequence at the end: one
      {"\xC0\xAF", fffd + fffd},                        // overlong: each byte
      {"\xED\xA0\x80", fffd + fffd + fffd},             // surrogate: each byte
      {"\xF4\x90\x80\x80", fffd + fffd + fffd + fffd},  // above U+10FFFF
      {"ab\xC3", "ab" + fffd}};
  for (const auto& [in, repaired] : cases) {
    INFO("input bytes of length " << in.size());
    CHECK(t.decode(t.encode(in)) == repaired);
    CHECK(t.encode(in) == t.encode(repaired));
  }
  CHECK(t.encode("ab") == std::vector<int64_t>{256});
}

TEST_CASE("tokenizer: refusals name the file and the component", "[tokenizer]") {
  CHECK_THROWS_WITH(Tokenizer::from_file((scratch() / "missing.json").string()),
                    Catch::Contains("cannot open") && Catch::Contains("missing.json"));
  CHECK_THROWS_WITH(Tokenizer::from_file(write("broken.json", "{\"model\": [")),
                    Catch::Contains("broken.json is not valid JSON"));
  json wp = letters_bpe({{"a", 0}}, json::array());
  wp["model"]["type"] = "WordPiece";
  CHECK_THROWS_WITH(load(wp, "wp.json"), Catch::Contains("wp.json: unknown model type WordPiece"));
  json nfkc = letters_bpe({{"a", 0}}, json::array());
  nfkc["normalizer"] = {{"type", "NFKC"}};
  CHECK_THROWS_WITH(load(nfkc), Catch::Contains("normalizer type NFKC is not supported"));
  json meta = letters_bpe({{"a", 0}}, json::array());
  meta["pre_tokenizer"] = {{"type", "Metaspace"}};
  CHECK_THROWS_WITH(load(meta), Catch::Contains("pre_tokenizer type Metaspace is not supported"));
  CHECK_THROWS_WITH(load(letters_bpe({{"a", 0}, {"b", 1}}, {"a b"})),
                    Catch::Contains("merge 0 of \"a b\": \"ab\" is not in the vocabulary"));
  json no_model = {{"added_tokens", json::array()}};
  CHECK_THROWS_WITH(load(no_model, "nomodel.json"),
                    Catch::Contains("nomodel.json: malformed tokenizer.json"));
  json bad_regex = letters_bpe({{"a", 0}}, json::array());
  bad_regex["pre_tokenizer"] = {{"type", "Split"},
                                {"pattern", {{"Regex", "(a"}}},
                                {"behavior", "Isolated"},
                                {"invert", false}};
  CHECK_THROWS_WITH(load(bad_regex), Catch::Contains("the regex (a does not compile in PCRE2"));
  const fs::path empty = scratch() / "empty_folder";
  fs::create_directories(empty);
  CHECK_THROWS_WITH(Tokenizer::from_pretrained(empty.string()),
                    Catch::Contains("has neither tokenizer.json nor vocab.json + merges.txt"));
  const Tokenizer t = load(letters_bpe({{"a", 0}}, json::array()));
  CHECK_THROWS_WITH(t.decode({0, 5}), Catch::Contains("id 5 is outside the vocabulary [0, 1)"));
  CHECK_THROWS_WITH(t.encode("b"), Catch::Contains("\"b\" is not in the vocabulary"));
}
