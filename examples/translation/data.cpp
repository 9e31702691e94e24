// examples/translation/data.cpp — the numbers task, the dictd readers and the freedict task.
#include "translation/data.hpp"

#include "autograd/tensor.hpp"
#include "common/cli.hpp"
#include "common/text.hpp"
#include "translation/numbers.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <unordered_set>

namespace tgx::translation {

namespace {

const char* const kFreedictInstall = "install it with: sudo apt-get install dict-freedict-eng-fra";

// A seeded Fisher–Yates shuffle on tg::Generator (the same on every platform).
template <typename T>
void shuffle(std::vector<T>& v, tg::Generator& g) {
  for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[g.next_u64() % i]);
}

int64_t uniform_int(tg::Generator& g, int64_t lo, int64_t hi) {  // [lo, hi]
  return lo + static_cast<int64_t>(g.next_u64() % static_cast<uint64_t>(hi - lo + 1));
}

}  // namespace

std::vector<std::string> tokenize(const std::string& text, Level level) {
  return level == Level::Word ? tokenize_words(text) : utf8_chars(text);
}

std::string detokenize(const std::vector<std::string>& tokens, Level level) {
  if (level == Level::Word) return detokenize_words(tokens);
  std::string s;
  for (const std::string& t : tokens) s += t;
  return s;
}

Example make_example(const std::string& src, const std::string& tgt, Level level) {
  return Example{src, tgt, tokenize(src, level), tokenize(tgt, level)};
}

Dataset make_numbers_dataset(const NumbersOptions& opts) {
  if (opts.train_size < 1 || opts.valid_size < 1 || opts.heldout_size < 1 ||
      opts.valid_size + opts.heldout_size > 100000)
    throw UserError(
        fmt::format("numbers task: sizes must be positive, valid + held-out <= 100000 "
                    "(train {}, valid {}, held-out {})",
                    opts.train_size, opts.valid_size, opts.heldout_size));
  tg::Generator g;
  g.set_seed(opts.seed);
  std::unordered_set<int64_t> reserved;
  auto draw_distinct = [&](int64_t count) {
    std::vector<int64_t> out;
    while (static_cast<int64_t>(out.size()) < count) {
      int64_t n = uniform_int(g, 0, kMaxNumber);
      if (reserved.insert(n).second) out.push_back(n);
    }
    return out;
  };
  auto to_examples = [](const std::vector<int64_t>& ns) {
    std::vector<Example> ex;
    for (int64_t n : ns) ex.push_back(make_example(english_words(n), french_words(n), Level::Word));
    return ex;
  };
  Dataset d;
  d.name = "numbers";
  d.heldout = to_examples(draw_distinct(opts.heldout_size));
  d.valid = to_examples(draw_distinct(opts.valid_size));
  std::vector<int64_t> train;
  while (static_cast<int64_t>(train.size()) < opts.train_size) {
    int64_t digits = uniform_int(g, 1, 6);
    int64_t lo = digits == 1 ? 0 : static_cast<int64_t>(std::pow(10, digits - 1));
    int64_t n = uniform_int(g, lo, static_cast<int64_t>(std::pow(10, digits)) - 1);
    // Round numbers have spellings of their own (deux cent mille / deux cents, quatre-vingt
    // mille / quatre-vingts) but are rare among uniform draws: make about 3 in 8 draws round.
    int64_t thousands = n / 1000, rest = n % 1000, r = uniform_int(g, 0, 7);
    if (r == 0 && thousands > 0) rest = 0;                              // 71000
    if (r == 1) rest = rest / 100 * 100;                                // 71400
    if (r == 2 && thousands >= 100) thousands = thousands / 100 * 100;  // 200402
    n = thousands * 1000 + rest;
    if (!reserved.count(n)) train.push_back(n);
  }
  d.train = to_examples(train);
  return d;
}

// ---- dictd -------------------------------------------------------------------------------------

int64_t dictd_base64(const std::string& s, const std::string& what) {
  static const std::string kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  if (s.empty()) throw UserError(fmt::format("{}: empty base64 number", what));
  int64_t v = 0;
  for (char c : s) {
    size_t d = kAlphabet.find(c);
    if (d == std::string::npos)
      throw UserError(
          fmt::format("{}: '{}' is not a dictd base64 number (bad character '{}')", what, s, c));
    if (v > (std::numeric_limits<int64_t>::max() >> 6))
      throw UserError(fmt::format("{}: base64 number '{}' is too large", what, s));
    v = v * 64 + static_cast<int64_t>(d);
  }
  return v;
}

std::vector<IndexEntry> parse_dictd_index(const std::string& text, const std::string& path) {
  require_utf8(text, path);
  std::vector<IndexEntry> out;
  size_t pos = 0;
  for (int64_t line_no = 1; pos < text.size(); ++line_no) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    std::string where = fmt::format("{} line {}", path, line_no);
    size_t t1 = line.find('\t'), t2 = t1 == std::string::npos ? t1 : line.find('\t', t1 + 1);
    if (t2 == std::string::npos || line.find('\t', t2 + 1) != std::string::npos)
      throw UserError(fmt::format("{}: expected 'headword<TAB>offset<TAB>length'", where));
    IndexEntry e;
    e.headword = trim(line.substr(0, t1));
    e.offset = dictd_base64(line.substr(t1 + 1, t2 - t1 - 1), where + " offset");
    e.length = dictd_base64(line.substr(t2 + 1), where + " length");
    out.push_back(e);
  }
  if (out.empty()) throw UserError(fmt::format("{}: no index entries", path));
  return out;
}

std::string read_dictd_dict(const std::string& path) {
  if (!file_exists(path))
    throw UserError(fmt::format("{}: no such file; {}", path, kFreedictInstall));
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw UserError(fmt::format("{}: cannot open", path));
  std::string out;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  int err = 0;
  std::string msg = n < 0 ? gzerror(f, &err) : "";
  gzclose(f);
  if (n < 0) throw UserError(fmt::format("{}: not a readable gzip/dictzip file ({})", path, msg));
  return out;
}

std::string first_translation(const std::string& entry) {
  size_t nl = entry.find('\n');
  while (nl != std::string::npos) {
    size_t end = entry.find('\n', nl + 1);
    std::string line =
        trim(entry.substr(nl + 1, end == std::string::npos ? std::string::npos : end - nl - 1));
    nl = end;
    size_t k = 0;  // "1. x" -> "x"
    while (k < line.size() && line[k] >= '0' && line[k] <= '9') ++k;
    if (k > 0 && k + 1 < line.size() && line[k] == '.' && line[k + 1] == ' ')
      line = trim(line.substr(k + 2));
    line = trim(line.substr(0, line.find(',')));
    if (!line.empty()) return squeeze_spaces(line);
  }
  return "";
}

std::vector<std::pair<std::string, std::string>> load_freedict_pairs(const std::string& index_path,
                                                                     const std::string& dict_path) {
  if (!file_exists(index_path))
    throw UserError(fmt::format("{}: no such file; {}", index_path, kFreedictInstall));
  std::vector<IndexEntry> index = parse_dictd_index(read_file(index_path), index_path);
  std::string dict = read_dictd_dict(dict_path);
  std::vector<std::pair<std::string, std::string>> pairs;
  std::set<std::string> seen;
  for (const IndexEntry& e : index) {
    if (starts_with(e.headword, "00database") || starts_with(e.headword, "00-database")) continue;
    if (e.offset + e.length > static_cast<int64_t>(dict.size()))
      throw UserError(
          fmt::format("{}: entry '{}' (offset {}, length {}) runs past the end of {} "
                      "({} bytes)",
                      index_path, e.headword, e.offset, e.length, dict_path, dict.size()));
    std::string entry = dict.substr(static_cast<size_t>(e.offset), static_cast<size_t>(e.length));
    require_utf8(entry, fmt::format("{} (entry '{}')", dict_path, e.headword));
    std::string fr = first_translation(entry);
    if (e.headword.empty() || fr.empty() || !seen.insert(e.headword).second) continue;
    pairs.emplace_back(e.headword, fr);
  }
  if (pairs.empty())
    throw UserError(fmt::format("{}: no usable entries (headword and translation)", index_path));
  return pairs;
}

Dataset make_freedict_dataset(const FreedictOptions& opts) {
  std::string base = opts.dir + "/freedict-eng-fra";
  auto pairs = load_freedict_pairs(base + ".index", base + ".dict.dz");
  tg::Generator g;
  g.set_seed(opts.seed);
  shuffle(pairs, g);
  Dataset d;
  d.name = "freedict-eng-fra";
  d.level = Level::Char;
  size_t n = pairs.size();
  size_t n_held = std::max<size_t>(1, static_cast<size_t>(n * opts.heldout_fraction));
  size_t n_valid = std::max<size_t>(1, static_cast<size_t>(n * opts.valid_fraction));
  if (n < n_held + n_valid + 1)
    throw UserError(fmt::format("{}: only {} entries, too few to split", base + ".index", n));
  for (size_t i = 0; i < n; ++i) {
    Example ex = make_example(pairs[i].first, pairs[i].second, Level::Char);
    (i < n_held ? d.heldout : i < n_held + n_valid ? d.valid : d.train).push_back(std::move(ex));
  }
  return d;
}

}  // namespace tgx::translation
