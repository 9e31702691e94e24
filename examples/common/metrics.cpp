// examples/common/metrics.cpp — confusion matrix, per-class metrics and chrF (metrics.hpp).
#include "common/metrics.hpp"

#include "autograd/tensor.hpp"
#include "common/text.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

namespace tgx {

ConfusionMatrix::ConfusionMatrix(std::vector<std::string> class_names)
    : names_(std::move(class_names)), m_(names_.size() * names_.size(), 0) {
  if (names_.empty()) throw tg::Error("ConfusionMatrix: needs at least one class");
}

void ConfusionMatrix::add(int64_t truth, int64_t predicted) {
  int64_t n = int64_t(names_.size());
  if (truth < 0 || truth >= n || predicted < 0 || predicted >= n)
    throw tg::Error("ConfusionMatrix::add: truth " + std::to_string(truth) + " / predicted " +
                    std::to_string(predicted) + " out of range for " + std::to_string(n) +
                    " classes");
  ++m_[size_t(truth * n + predicted)];
}

int64_t ConfusionMatrix::count(int64_t truth, int64_t predicted) const {
  return m_.at(size_t(truth * int64_t(names_.size()) + predicted));
}

int64_t ConfusionMatrix::total() const {
  int64_t t = 0;
  for (int64_t v : m_) t += v;
  return t;
}

double ConfusionMatrix::accuracy() const {
  int64_t ok = 0, n = int64_t(names_.size());
  for (int64_t i = 0; i < n; ++i) ok += count(i, i);
  return total() > 0 ? double(ok) / double(total()) : 0.0;
}

std::vector<ClassMetrics> ConfusionMatrix::per_class() const {
  int64_t n = int64_t(names_.size());
  std::vector<ClassMetrics> out;
  for (int64_t c = 0; c < n; ++c) {
    int64_t tp = count(c, c), pred = 0, truth = 0;
    for (int64_t k = 0; k < n; ++k) pred += count(k, c), truth += count(c, k);
    ClassMetrics m;
    m.name = names_[size_t(c)];
    m.support = truth;
    m.precision = pred > 0 ? double(tp) / double(pred) : 0.0;
    m.recall = truth > 0 ? double(tp) / double(truth) : 0.0;
    m.f1 = m.precision + m.recall > 0 ? 2 * m.precision * m.recall / (m.precision + m.recall) : 0.0;
    out.push_back(m);
  }
  return out;
}

double ConfusionMatrix::macro_f1() const {
  auto pc = per_class();
  double s = 0;
  for (const auto& m : pc) s += m.f1;
  return s / double(pc.size());
}

std::string ConfusionMatrix::str() const {
  std::ostringstream o;
  size_t w = 9;
  for (const auto& n : names_) w = std::max(w, n.size() + 1);
  char buf[128];
  o << std::string(w, ' ') << "precision    recall        f1   support\n";
  for (const auto& m : per_class()) {
    std::snprintf(buf, sizeof buf, "%9.4f %9.4f %9.4f %9lld\n", m.precision, m.recall, m.f1,
                  (long long)m.support);
    o << m.name << std::string(w - m.name.size(), ' ') << buf;
  }
  std::snprintf(buf, sizeof buf, "accuracy %.4f   macro F1 %.4f   (%lld examples)\n", accuracy(),
                macro_f1(), (long long)total());
  o << buf << "confusion matrix (rows: truth, columns: predicted)\n" << std::string(w, ' ');
  for (size_t c = 0; c < names_.size(); ++c)
    o << " " << std::string(std::max<size_t>(0, 8 - std::min<size_t>(8, names_[c].size())), ' ')
      << names_[c].substr(0, 8);
  o << "\n";
  for (size_t r = 0; r < names_.size(); ++r) {
    o << names_[r] << std::string(w - names_[r].size(), ' ');
    for (size_t c = 0; c < names_.size(); ++c) {
      std::snprintf(buf, sizeof buf, " %8lld", (long long)count(int64_t(r), int64_t(c)));
      o << buf;
    }
    o << "\n";
  }
  return o.str();
}

// ---- chrF ---------------------------------------------------------------------------------------
namespace {
using NgramCounts = std::map<std::string, int64_t>;

// Character n-gram counts of s with whitespace removed (sacrebleu's default).
std::vector<NgramCounts> char_ngrams(const std::string& s, int max_n) {
  std::vector<std::string> chars;
  for (auto& c : utf8_chars(s))
    if (c != " " && c != "\t" && c != "\n") chars.push_back(c);
  std::vector<NgramCounts> out(static_cast<size_t>(max_n), NgramCounts{});
  for (int n = 1; n <= max_n; ++n)
    for (size_t i = 0; i + size_t(n) <= chars.size(); ++i) {
      std::string g;
      for (int k = 0; k < n; ++k) g += chars[i + size_t(k)];
      ++out[size_t(n - 1)][g];
    }
  return out;
}
}  // namespace

double chrf(const std::vector<std::string>& hyps, const std::vector<std::string>& refs) {
  if (hyps.size() != refs.size())
    throw tg::Error("chrf: " + std::to_string(hyps.size()) + " hypotheses for " +
                    std::to_string(refs.size()) + " references");
  const int max_n = 6;
  const double beta = 2.0;
  // corpus-level statistics per order: matches, hypothesis n-grams, reference n-grams
  std::vector<double> match(max_n, 0), hyp(max_n, 0), ref(max_n, 0);
  for (size_t i = 0; i < hyps.size(); ++i) {
    auto h = char_ngrams(hyps[i], max_n), r = char_ngrams(refs[i], max_n);
    for (int n = 0; n < max_n; ++n) {
      for (const auto& [g, c] : h[size_t(n)]) {
        hyp[size_t(n)] += double(c);
        auto it = r[size_t(n)].find(g);
        if (it != r[size_t(n)].end()) match[size_t(n)] += double(std::min(c, it->second));
      }
      for (const auto& kv : r[size_t(n)]) ref[size_t(n)] += double(kv.second);
    }
  }
  // sacrebleu 2.x: precision and recall summed over every order, divided by the number of
  // orders where both sides have n-grams (the "effective order"), then F-beta.
  double p = 0, r = 0;
  int orders = 0;
  for (int n = 0; n < max_n; ++n) {
    if (hyp[size_t(n)] > 0) p += match[size_t(n)] / hyp[size_t(n)];
    if (ref[size_t(n)] > 0) r += match[size_t(n)] / ref[size_t(n)];
    if (hyp[size_t(n)] > 0 && ref[size_t(n)] > 0) ++orders;
  }
  if (orders == 0) return 0.0;
  p /= orders, r /= orders;
  if (p + r == 0) return 0.0;
  double b2 = beta * beta;
  return 100.0 * (1 + b2) * p * r / (b2 * p + r);
}

}  // namespace tgx
