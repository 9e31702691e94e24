// examples/translation/numbers.hpp — integers 0 … 999,999 written out in English and French
// words, exactly as Python's num2words 0.5 writes them (the committed fixture
// tests/fixtures/examples/translation/num2words.tsv is the reference), and the word tokeniser
// the translation task uses ("-" and "," are tokens of their own, so tokens join back exactly).
//
// Not here: datasets or vocabularies (data.hpp, vocab.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tgx::translation {

constexpr int64_t kMaxNumber = 999999;  // the largest number the generators write

// "seventy-one thousand, four hundred and two". Throws tgx::UserError outside [0, 999999].
std::string english_words(int64_t n);
// "soixante et onze mille quatre cent deux". Throws tgx::UserError outside [0, 999999].
std::string french_words(int64_t n);

// Splits on spaces; "-" and "," become tokens of their own ("twenty-one," -> twenty - one ,).
std::vector<std::string> tokenize_words(const std::string& text);
// The inverse for text tokenize_words produced: words joined by spaces, no space around "-"
// and none before ",".
std::string detokenize_words(const std::vector<std::string>& tokens);

}  // namespace tgx::translation
