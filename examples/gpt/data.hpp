// examples/gpt/data.hpp — the GPT's text: Debian's fortunes as one corpus, split by file, and
// the character vocabulary.
//
//  corpus    every plain-text fortune file of the folder (default /usr/share/games/fortunes):
//            regular files only, so the *.u8 symlinks, *.dat indexes and subfolders such as off/
//            are skipped. Each item (common/fortunes.hpp: overstrikes resolved, lines and
//            indentation kept) loses its trailing whitespace and is written back followed by
//            "\n%\n", so the text reads like a fortune file and the model learns where a fortune
//            ends. A missing folder is a UserError naming the install command.
//  split     seeded, by file: whole files are held out (about 10 % of the characters), the rest is
//            training. Nothing from a held-out file is ever trained on or tuned on.
//  vocab     UTF-8 code points of the training text, sorted, after <unk> (id 0). A held-out
//            character the training text never shows becomes <unk> (counted in the split's
//            report); a --sample prompt with such a character is refused.
// Deliberately not here: batching and evaluation windows (train.hpp), the baseline (ngram.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tgx::gpt {

struct CorpusFile {
  std::string name;  // the file name, e.g. "computers"
  std::string text;  // the normalised text (items each followed by "\n%\n")
  int64_t items = 0;
  int64_t chars = 0;  // code points of text
};

// Loads every fortune file of dir, sorted by name. UserError for a missing folder (with the
// install command), a folder without fortune files, or text that is not valid UTF-8.
std::vector<CorpusFile> load_corpus(const std::string& dir);

struct Split {
  std::vector<std::string> train_files, heldout_files;  // names, in corpus order
  std::string train_text, heldout_text;                 // the files' texts, concatenated
  int64_t train_chars = 0, heldout_chars = 0;
};
// Seeded split by file: a seeded shuffle of the files, then files go to held-out until it holds
// heldout_frac of the characters (a file that would overshoot the target by more than half is
// passed over); at least one file each. UserError with fewer than 2 files.
Split split_by_file(const std::vector<CorpusFile>& files, uint64_t seed, double heldout_frac = 0.1);

class CharVocab {
 public:
  static constexpr int64_t kUnk = 0;
  CharVocab() = default;
  // The code points of text, sorted (byte order of their UTF-8), after <unk>.
  static CharVocab build(const std::string& text);
  int64_t size() const { return static_cast<int64_t>(chars_.size()); }
  // Unseen code points become kUnk (*unknown, when given, counts them).
  std::vector<int64_t> encode(const std::string& text, int64_t* unknown = nullptr) const;
  // The ids of text; UserError naming `what` and listing the characters not in the vocabulary.
  std::vector<int64_t> encode_strict(const std::string& text, const std::string& what) const;
  std::string decode(const std::vector<int64_t>& ids) const;  // <unk> is written as U+FFFD
  int64_t id(const std::string& ch) const;                    // kUnk when unseen
  const std::vector<std::string>& chars() const { return chars_; }

  std::string to_json() const;  // ["<unk>", "\n", " ", "!", ...]
  // UserError naming `what` when the text is not a vocabulary this program wrote.
  static CharVocab from_json(const std::string& text, const std::string& what);

 private:
  std::vector<std::string> chars_;  // id -> code point ("<unk>" at 0)
};

}  // namespace tgx::gpt
