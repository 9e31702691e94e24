// examples/translation/data.hpp — the translation tasks as tokenised sentence pairs split into
// train / validation / held-out sets:
//   numbers            English number words -> French number words for 0 … 999,999, generated
//                      here (word tokens). The held-out and validation numbers are drawn by seed
//                      and never appear in training.
//   freedict-eng-fra   English headword -> its first French translation from Debian's
//                      dict-freedict-eng-fra (dictd .index + gzip'd .dict.dz), character tokens.
// and the dictd readers behind the second one (base64 offsets, index lines, entries).
//
// Not here: vocabularies and batching into tensors (vocab.hpp, train.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tgx::translation {

enum class Level { Word, Char };

struct Example {
  std::string src_text, tgt_text;
  std::vector<std::string> src, tgt;  // tokens
};

struct Dataset {
  std::string name;
  Level level = Level::Word;
  std::vector<Example> train, valid, heldout;
};

std::vector<std::string> tokenize(const std::string& text, Level level);
std::string detokenize(const std::vector<std::string>& tokens, Level level);
Example make_example(const std::string& src, const std::string& tgt, Level level);

struct NumbersOptions {
  uint64_t seed = 1;
  int64_t train_size = 200000;  // training pairs (numbers may repeat: there are only 10 digits)
  int64_t valid_size = 1000;
  int64_t heldout_size = 2000;
};
// Held-out, then validation numbers: distinct, uniform over [0, 999999]. Training numbers: a
// digit count 1 … 6 uniformly, then a number of that many digits, never a held-out or
// validation one (so small numbers are seen as often as large ones); about 3 in 8 are then made
// round (thousands only, whole hundreds, whole hundred-thousands) so that their spellings are
// learned too.
Dataset make_numbers_dataset(const NumbersOptions& opts);

// ---- dictd (freedict) ----
struct IndexEntry {
  std::string headword;
  int64_t offset = 0, length = 0;
};
// dictd's base64 numbers (alphabet A-Za-z0-9+/, most significant digit first). Throws
// UserError naming `what` for an empty string, another character or overflow.
int64_t dictd_base64(const std::string& s, const std::string& what);
// "headword \t offset \t length" lines; `path` names the file in errors (with the line number).
std::vector<IndexEntry> parse_dictd_index(const std::string& text, const std::string& path);
// The whole .dict (gzip / dictzip or plain) through zlib. Missing -> UserError naming the file
// and the package that installs it.
std::string read_dictd_dict(const std::string& path);
// The first translation of an entry "headword /pron/\n1. x, y\n2. z\n" -> "x" ("" when none).
std::string first_translation(const std::string& entry);

struct FreedictOptions {
  std::string dir = "/usr/share/dictd";  // holds freedict-eng-fra.index and .dict.dz
  uint64_t seed = 1;
  double valid_fraction = 0.05, heldout_fraction = 0.10;
};
// (headword, first translation) for every entry but 00-database-*, the first entry of each
// headword; offsets past the end of the .dict and non-UTF-8 text are UserErrors naming the file.
std::vector<std::pair<std::string, std::string>> load_freedict_pairs(const std::string& index_path,
                                                                     const std::string& dict_path);
// The pairs, shuffled by seed and split (character tokens).
Dataset make_freedict_dataset(const FreedictOptions& opts);

}  // namespace tgx::translation
