// examples/finetune/data.cpp — the corpus as token ids and its batches (see data.hpp).
#include "finetune/data.hpp"

#include "common/cli.hpp"
#include "common/fortunes.hpp"
#include "common/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

namespace tgx::finetune {
namespace fs = std::filesystem;

namespace {

constexpr const char* kFortunesHint = "install Debian's fortunes package or give --data FILE";

// The fortune items of every plain file of the folder, in name order (symlinks, .dat indexes
// and folders skipped, as the gpt example reads it).
std::vector<std::string> fortune_texts(const std::string& dir) {
  if (!fs::is_directory(dir))
    throw UserError(fmt::format("{}: no such folder; {}", dir, kFortunesHint));
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    auto ends = [&](const std::string& s) {
      return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
    };
    if (e.is_symlink() || !e.is_regular_file() || ends(".dat") || ends(".u8") || name[0] == '.')
      continue;
    names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  std::vector<std::string> items;
  for (const std::string& name : names) {
    const std::string path = dir + "/" + name;
    for (std::string& it : fortune_items(read_file(path, kFortunesHint), path))
      items.push_back(std::move(it));
  }
  return items;
}

}  // namespace

Corpus load_corpus(const std::string& data, const tg::nn::Tokenizer& tok, int64_t block) {
  Corpus c;
  c.source = data.empty() ? std::string(kFortunesDir) : data;
  const std::vector<std::string> items = fs::is_directory(c.source)
                                             ? fortune_texts(c.source)
                                             : std::vector<std::string>{read_file(c.source)};
  const std::optional<int64_t> eos = tok.eos_token_id();
  std::vector<int64_t> ids;
  for (const std::string& item : items) {
    const std::vector<int64_t> e = tok.encode(item);
    ids.insert(ids.end(), e.begin(), e.end());
    if (eos) ids.push_back(*eos);
    c.bytes += static_cast<int64_t>(item.size());
  }
  c.items = static_cast<int64_t>(items.size());
  const int64_t n = static_cast<int64_t>(ids.size()), held = n / 10;
  if (held < block + 1 || n - held < block + 1)
    throw UserError(fmt::format(
        "{}: {} tokens are too few for --block {}: the held-out tenth and the rest must each "
        "hold a window of {} tokens (need at least {} tokens)",
        c.source, n, block, block + 1, 10 * (block + 1)));
  c.train.assign(ids.begin(), ids.end() - held);
  c.heldout.assign(ids.end() - held, ids.end());
  return c;
}

namespace {

std::pair<tg::Tensor, tg::Tensor> windows(const std::vector<int64_t>& ids,
                                          const std::vector<int64_t>& starts, int64_t block) {
  const int64_t B = static_cast<int64_t>(starts.size());
  std::vector<int64_t> x, y;
  x.reserve(static_cast<size_t>(B * block));
  y.reserve(static_cast<size_t>(B * block));
  for (int64_t s : starts) {
    x.insert(x.end(), ids.begin() + s, ids.begin() + s + block);
    y.insert(y.end(), ids.begin() + s + 1, ids.begin() + s + block + 1);
  }
  return {tg::tensor(x, {B, block}), tg::tensor(y, {B, block})};
}

}  // namespace

std::pair<tg::Tensor, tg::Tensor> random_batch(const std::vector<int64_t>& ids, int64_t B,
                                               int64_t block) {
  const int64_t hi = static_cast<int64_t>(ids.size()) - block;  // starts in [0, hi)
  return windows(ids, tg::randint(0, hi, {B}).to_vector<int64_t>(), block);
}

std::vector<std::pair<tg::Tensor, tg::Tensor>> fixed_batches(const std::vector<int64_t>& ids,
                                                             int64_t count, int64_t B,
                                                             int64_t block) {
  const int64_t n = std::min<int64_t>(count, (static_cast<int64_t>(ids.size()) - 1) / block);
  std::vector<std::pair<tg::Tensor, tg::Tensor>> out;
  for (int64_t i = 0; i < n; i += B) {
    std::vector<int64_t> starts;
    for (int64_t w = i; w < std::min(n, i + B); ++w) starts.push_back(w * block);
    out.push_back(windows(ids, starts, block));
  }
  return out;
}

}  // namespace tgx::finetune
