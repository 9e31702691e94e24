// examples/gpt/data.cpp — the fortunes corpus, the split by file and the character vocabulary
// (see data.hpp).
#include "gpt/data.hpp"

#include "autograd/tensor.hpp"
#include "common/cli.hpp"
#include "common/fortunes.hpp"
#include "common/text.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

namespace tgx::gpt {
namespace {

namespace fs = std::filesystem;

const char* kInstallHint =
    "install it with: bash tools/setup.sh --data   (or: sudo apt-get install fortunes), or pass "
    "--data-dir DIR";

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The byte length of the UTF-8 sequence led by c (the text is validated before).
size_t seq_len(unsigned char c) { return c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4; }

// Calls f(code point as a string view) for every character of valid UTF-8 text.
template <typename F>
void for_each_char(const std::string& text, F&& f) {
  for (size_t i = 0; i < text.size();) {
    size_t n = std::min(seq_len(static_cast<unsigned char>(text[i])), text.size() - i);
    f(std::string_view(text).substr(i, n));
    i += n;
  }
}

int64_t count_chars(const std::string& text) {
  int64_t n = 0;
  for (unsigned char c : text) n += (c & 0xC0) != 0x80;
  return n;
}

// The item without trailing whitespace, followed by the separator.
std::string normalise(const std::string& item) {
  size_t e = item.size();
  while (e > 0 && std::isspace(static_cast<unsigned char>(item[e - 1]))) --e;
  return item.substr(0, e) + "\n%\n";
}

}  // namespace

std::vector<CorpusFile> load_corpus(const std::string& dir_in) {
  const std::string dir = dir_in.empty() ? kFortunesDir : dir_in;
  if (!dir_exists(dir))
    throw UserError(fmt::format("{}: no such folder (Debian's fortunes); {}", dir, kInstallHint));
  std::vector<std::string> names;
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    // Plain files only: the .u8 names are symlinks to them, .dat files are strfile indexes,
    // off/ (offensive fortunes, where installed) is a folder.
    if (it->is_symlink(ec) || !it->is_regular_file(ec) || ends_with(name, ".dat") ||
        ends_with(name, ".u8") || name.empty() || name[0] == '.')
      continue;
    names.push_back(name);
  }
  if (ec) throw UserError(fmt::format("{}: cannot list the folder ({})", dir, ec.message()));
  std::sort(names.begin(), names.end());
  std::vector<CorpusFile> files;
  for (const std::string& name : names) {
    const std::string path = dir + "/" + name;
    CorpusFile f{name, "", 0, 0};
    for (const std::string& item : fortune_items(read_file(path, kInstallHint), path)) {
      f.text += normalise(item);
      ++f.items;
    }
    f.chars = count_chars(f.text);
    if (f.items > 0) files.push_back(std::move(f));
  }
  if (files.empty())
    throw UserError(fmt::format("{}: no fortune files (text with '%' separators) found; {}", dir,
                                kInstallHint));
  return files;
}

Split split_by_file(const std::vector<CorpusFile>& files, uint64_t seed, double heldout_frac) {
  const int64_t n = static_cast<int64_t>(files.size());
  if (n < 2)
    throw UserError(
        fmt::format("the corpus has {} fortune file(s); a split by file needs at least 2", n));
  std::vector<int64_t> order(n);
  int64_t total = 0;
  for (int64_t i = 0; i < n; ++i) {
    order[i] = i;
    total += files[i].chars;
  }
  tg::Generator g;
  g.set_seed(seed * 1000003ULL + 0x6a7);
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[g.next_u64() % i]);
  const double target = heldout_frac * static_cast<double>(total);
  std::vector<bool> held(n, false);
  int64_t have = 0, count = 0;
  for (int64_t i : order) {
    if (static_cast<double>(have) >= target || count == n - 1) break;
    if (static_cast<double>(have + files[i].chars) > 1.5 * target) continue;
    held[i] = true;
    have += files[i].chars;
    ++count;
  }
  if (count == 0) held[order.front()] = true;  // every file overshoots: hold out one anyway
  Split s;
  for (int64_t i = 0; i < n; ++i) {
    (held[i] ? s.heldout_files : s.train_files).push_back(files[i].name);
    (held[i] ? s.heldout_text : s.train_text) += files[i].text;
    (held[i] ? s.heldout_chars : s.train_chars) += files[i].chars;
  }
  return s;
}

// ---- vocabulary ---------------------------------------------------------------------------------

CharVocab CharVocab::build(const std::string& text) {
  std::map<std::string, bool> seen;
  for_each_char(text, [&](std::string_view c) { seen.emplace(std::string(c), true); });
  CharVocab v;
  v.chars_.push_back("<unk>");
  for (const auto& [c, _] : seen) v.chars_.push_back(c);
  return v;
}

int64_t CharVocab::id(const std::string& ch) const {
  // chars_[1:] is sorted: binary search.
  auto it = std::lower_bound(chars_.begin() + (chars_.empty() ? 0 : 1), chars_.end(), ch);
  return it != chars_.end() && *it == ch ? static_cast<int64_t>(it - chars_.begin()) : kUnk;
}

std::vector<int64_t> CharVocab::encode(const std::string& text, int64_t* unknown) const {
  std::vector<int64_t> ids;
  ids.reserve(text.size());
  int64_t unk = 0;
  int64_t ascii[128];  // the common case without a search
  for (int c = 0; c < 128; ++c) ascii[c] = id(std::string(1, static_cast<char>(c)));
  for_each_char(text, [&](std::string_view c) {
    int64_t i = c.size() == 1 ? ascii[static_cast<unsigned char>(c[0]) & 0x7F] : id(std::string(c));
    unk += i == kUnk;
    ids.push_back(i);
  });
  if (unknown) *unknown = unk;
  return ids;
}

std::vector<int64_t> CharVocab::encode_strict(const std::string& text,
                                              const std::string& what) const {
  require_utf8(text, what);
  std::vector<std::string> bad;
  for_each_char(text, [&](std::string_view c) {
    std::string s(c);
    if (id(s) == kUnk && std::find(bad.begin(), bad.end(), s) == bad.end()) bad.push_back(s);
  });
  if (!bad.empty()) {
    std::vector<std::string> shown;
    for (const std::string& c : bad) {
      nlohmann::json j = c;  // a JSON string shows control characters readably
      shown.push_back(j.dump());
    }
    throw UserError(fmt::format(
        "{}: {} character(s) not in the model's vocabulary of {} (the training text never has "
        "them): {}",
        what, bad.size(), size() - 1, fmt::join(shown, ", ")));
  }
  return encode(text);
}

std::string CharVocab::decode(const std::vector<int64_t>& ids) const {
  std::string out;
  for (int64_t i : ids)
    out += i > kUnk && i < size() ? chars_[static_cast<size_t>(i)] : "\xEF\xBF\xBD";
  return out;
}

std::string CharVocab::to_json() const { return nlohmann::json(chars_).dump(); }

CharVocab CharVocab::from_json(const std::string& text, const std::string& what) {
  CharVocab v;
  try {
    v.chars_ = nlohmann::json::parse(text).get<std::vector<std::string>>();
  } catch (const nlohmann::json::exception& e) {
    throw UserError(fmt::format("{}: not a character vocabulary ({})", what, e.what()));
  }
  if (v.chars_.size() < 2 || v.chars_[0] != "<unk>" ||
      !std::is_sorted(v.chars_.begin() + 1, v.chars_.end()))
    throw UserError(fmt::format("{}: not a character vocabulary (<unk> first, then sorted)", what));
  return v;
}

}  // namespace tgx::gpt
