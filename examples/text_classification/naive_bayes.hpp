// examples/text_classification/naive_bayes.hpp — the baseline: multinomial Naive Bayes with
// Laplace (add-alpha) smoothing over word counts, trained and evaluated on the same split as the
// Transformer so the two accuracies can be compared.
//   log P(c | doc) ∝ log prior(c) + Σ_w n(w, doc) · log((count(w, c) + α) / (total(c) + α·|V|))
// V is the training vocabulary; words never seen in training are ignored at prediction time.
// Deliberately not here: tokenization (callers pass token lists, e.g. Bpe::pretokenize's words).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace tgx::cls {

class NaiveBayes {
 public:
  explicit NaiveBayes(int64_t num_classes, double alpha = 1.0);
  void fit(const std::vector<std::vector<std::string>>& docs, const std::vector<int64_t>& labels);
  // Unnormalised log posteriors (log prior + log likelihood), one per class.
  std::vector<double> log_scores(const std::vector<std::string>& doc) const;
  // Normalised class probabilities.
  std::vector<double> predict_proba(const std::vector<std::string>& doc) const;
  int64_t predict(const std::vector<std::string>& doc) const;
  int64_t vocab_size() const { return static_cast<int64_t>(vocab_.size()); }

 private:
  int64_t num_classes_;
  double alpha_;
  std::vector<double> log_prior_;
  std::vector<double> total_;                                   // word tokens per class
  std::unordered_map<std::string, std::vector<double>> vocab_;  // word -> count per class
};

}  // namespace tgx::cls
