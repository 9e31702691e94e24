// examples/common/metrics.hpp — classification metrics: confusion matrix, accuracy, per-class
// precision / recall / F1 (macro averages too), printed as tables; and chrF for translation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tgx {

struct ClassMetrics {
  std::string name;
  double precision = 0, recall = 0, f1 = 0;
  int64_t support = 0;  // true examples of this class
};

class ConfusionMatrix {
 public:
  explicit ConfusionMatrix(std::vector<std::string> class_names);
  void add(int64_t truth, int64_t predicted);  // throws on a class index out of range
  int64_t count(int64_t truth, int64_t predicted) const;
  int64_t total() const;
  double accuracy() const;
  std::vector<ClassMetrics> per_class() const;  // precision/recall 0 when undefined
  double macro_f1() const;
  const std::vector<std::string>& names() const { return names_; }
  // Per-class table (precision, recall, F1, support) then the matrix (rows truth, cols predicted).
  std::string str() const;

 private:
  std::vector<std::string> names_;
  std::vector<int64_t> m_;
};

// chrF (Popović 2015; sacrebleu's defaults: character n-grams 1..6, beta 2, spaces removed),
// corpus level, in [0, 100].
double chrf(const std::vector<std::string>& hypotheses, const std::vector<std::string>& references);

}  // namespace tgx
