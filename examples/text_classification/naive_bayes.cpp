// examples/text_classification/naive_bayes.cpp — multinomial Naive Bayes (see naive_bayes.hpp).
#include "text_classification/naive_bayes.hpp"

#include "autograd/tensor.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace tgx::cls {

NaiveBayes::NaiveBayes(int64_t num_classes, double alpha)
    : num_classes_(num_classes), alpha_(alpha) {
  if (num_classes < 1 || !(alpha > 0))
    throw tg::Error(fmt::format("NaiveBayes: num_classes {} must be >= 1 and alpha {} > 0",
                                num_classes, alpha));
}

void NaiveBayes::fit(const std::vector<std::vector<std::string>>& docs,
                     const std::vector<int64_t>& labels) {
  if (docs.size() != labels.size() || docs.empty())
    throw tg::Error(fmt::format("NaiveBayes::fit: {} documents but {} labels (need >= 1)",
                                docs.size(), labels.size()));
  std::vector<double> ndocs(num_classes_, 0.0);
  total_.assign(num_classes_, 0.0);
  vocab_.clear();
  for (size_t i = 0; i < docs.size(); ++i) {
    int64_t c = labels[i];
    if (c < 0 || c >= num_classes_)
      throw tg::Error(
          fmt::format("NaiveBayes::fit: label {} out of range [0, {})", c, num_classes_));
    ndocs[c] += 1;
    for (const std::string& w : docs[i]) {
      auto& counts = vocab_[w];
      if (counts.empty()) counts.assign(num_classes_, 0.0);
      counts[c] += 1;
      total_[c] += 1;
    }
  }
  log_prior_.resize(num_classes_);
  for (int64_t c = 0; c < num_classes_; ++c)  // classes absent from training get prior 0 (-inf)
    log_prior_[c] = std::log(ndocs[c] / static_cast<double>(docs.size()));
}

std::vector<double> NaiveBayes::log_scores(const std::vector<std::string>& doc) const {
  if (log_prior_.empty()) throw tg::Error("NaiveBayes: predict before fit");
  std::vector<double> s = log_prior_;
  const double V = static_cast<double>(vocab_.size());
  for (const std::string& w : doc) {
    auto it = vocab_.find(w);
    if (it == vocab_.end()) continue;
    for (int64_t c = 0; c < num_classes_; ++c)
      s[c] += std::log((it->second[c] + alpha_) / (total_[c] + alpha_ * V));
  }
  return s;
}

std::vector<double> NaiveBayes::predict_proba(const std::vector<std::string>& doc) const {
  std::vector<double> s = log_scores(doc);
  double m = *std::max_element(s.begin(), s.end()), z = 0;
  for (double& v : s) z += (v = std::exp(v - m));
  for (double& v : s) v /= z;
  return s;
}

int64_t NaiveBayes::predict(const std::vector<std::string>& doc) const {
  std::vector<double> s = log_scores(doc);
  return std::max_element(s.begin(), s.end()) - s.begin();
}

}  // namespace tgx::cls
