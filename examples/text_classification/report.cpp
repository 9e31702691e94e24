// examples/text_classification/report.cpp — loss curves, attention heatmaps, metrics JSON and the
// printed comparison (see report.hpp).
#include "text_classification/report.hpp"

#include "autograd/tape.hpp"
#include "common/png.hpp"
#include "ops/ops.hpp"

#include <fmt/format.h>

#include <filesystem>

namespace tgx::cls {

nlohmann::json History::to_json() const {
  return {{"train_loss", train_loss},
          {"val_step", val_step},
          {"val_loss", val_loss},
          {"val_acc", val_acc}};
}

History History::from_json(const nlohmann::json& j) {
  History h;
  if (!j.is_object()) return h;
  auto get = [&](const char* k, auto& v) {
    if (j.contains(k) && j[k].is_array()) v = j[k].get<std::decay_t<decltype(v)>>();
  };
  get("train_loss", h.train_loss);
  get("val_step", h.val_step);
  get("val_loss", h.val_loss);
  get("val_acc", h.val_acc);
  return h;
}

void write_loss_curve(const std::string& path, const History& h) {
  Series raw{"train loss (per step)", {}, {}, {200, 200, 220}};
  Series smooth{"train loss (EMA 0.95)", {}, {}, {31, 119, 180}};
  double ema = 0;
  for (size_t i = 0; i < h.train_loss.size(); ++i) {
    ema = i == 0 ? h.train_loss[0] : 0.95 * ema + 0.05 * h.train_loss[i];
    raw.x.push_back(static_cast<double>(i + 1));
    raw.y.push_back(h.train_loss[i]);
    smooth.x.push_back(static_cast<double>(i + 1));
    smooth.y.push_back(ema);
  }
  Series vloss{"validation loss", {}, {}, {214, 39, 40}};
  Series vacc{"validation accuracy", {}, {}, {44, 160, 44}};
  for (size_t i = 0; i < h.val_step.size() && i < h.val_loss.size() && i < h.val_acc.size(); ++i) {
    vloss.x.push_back(static_cast<double>(h.val_step[i]));
    vloss.y.push_back(h.val_loss[i]);
    vacc.x.push_back(static_cast<double>(h.val_step[i]));
    vacc.y.push_back(h.val_acc[i]);
  }
  for (double& a : vacc.y) a *= 100;  // percent, on its own panel
  const double last_step = static_cast<double>(h.train_loss.size());
  PlotOptions o;
  o.title = "text classification: cross-entropy loss";
  o.xlabel = "optimizer step";
  o.ylabel = "loss (nats)";
  o.height = 400;
  o.x_min = 0;
  o.x_max = last_step;
  PlotOptions a;
  a.title = "validation accuracy";
  a.xlabel = "optimizer step";
  a.ylabel = "accuracy %";
  a.y_from_zero = false;
  a.y_max = 100;
  a.height = 300;
  a.x_min = 0;
  a.x_max = last_step;
  write_png(path, stack_vertical({line_plot({raw, smooth, vloss}, o), line_plot({vacc}, a)}));
}

namespace {

// A token as an ASCII axis label: the word marker becomes '_' (a word start).
std::string label_of(const std::string& tok) {
  std::string out, marker = Bpe::kMarker;
  for (size_t i = 0; i < tok.size();) {
    if (tok.compare(i, marker.size(), marker) == 0) {
      out += '_';
      i += marker.size();
    } else {
      out += tok[i++];
    }
  }
  return out;
}

}  // namespace

int write_attention_pictures(const std::string& dir, TextClassifier& model, const Bpe& bpe,
                             const std::string& text, int64_t max_tokens) {
  std::vector<int64_t> ids = bpe.encode(text, std::min(max_tokens, model.cfg.max_len));
  if (ids.empty()) ids.push_back(Bpe::kUnk);
  const int64_t T = static_cast<int64_t>(ids.size());
  std::vector<std::string> labels;
  for (int64_t id : ids) labels.push_back(label_of(bpe.token(id)));
  tg::NoGradGuard ng;
  model.eval();
  model.keep_attention(true);
  model.forward(tg::tensor(ids, {1, T}), tg::tensor(std::vector<bool>(T, false), {1, T}));
  std::vector<tg::Tensor> att = model.attention();  // per layer (1, NH, T, T)
  model.keep_attention(false);
  model.train();
  std::filesystem::create_directories(dir);
  int written = 0;
  for (size_t l = 0; l < att.size(); ++l) {
    if (!att[l].defined()) continue;
    std::vector<double> w = att[l].to_vector<double>();
    const int64_t NH = att[l].size(1);
    for (int64_t h = 0; h < NH; ++h) {
      std::vector<double> head(w.begin() + h * T * T, w.begin() + (h + 1) * T * T);
      HeatmapOptions o;
      o.title = fmt::format("layer {} head {}: attention (rows query, cols key)", l, h);
      o.row_labels = labels;
      o.col_labels = labels;
      write_png(fmt::format("{}/layer{}_head{}.png", dir, l, h),
                heatmap(head, static_cast<int>(T), static_cast<int>(T), o));
      ++written;
    }
  }
  return written;
}

nlohmann::json metrics_json(const ConfusionMatrix& cm) {
  nlohmann::json per_class = nlohmann::json::array();
  for (const ClassMetrics& m : cm.per_class())
    per_class.push_back({{"class", m.name},
                         {"precision", m.precision},
                         {"recall", m.recall},
                         {"f1", m.f1},
                         {"support", m.support}});
  nlohmann::json matrix = nlohmann::json::array();
  const int64_t C = static_cast<int64_t>(cm.names().size());
  for (int64_t t = 0; t < C; ++t) {
    std::vector<int64_t> row;
    for (int64_t p = 0; p < C; ++p) row.push_back(cm.count(t, p));
    matrix.push_back(row);
  }
  return {{"accuracy", cm.accuracy()},
          {"macro_f1", cm.macro_f1()},
          {"per_class", per_class},
          {"confusion_matrix", matrix}};
}

std::string comparison(const ConfusionMatrix& model, const ConfusionMatrix& baseline,
                       const std::string& what) {
  std::string s = fmt::format(
      "test accuracy on {} held-out {}: Transformer {:.2f}%   Naive Bayes baseline {:.2f}%\n\n",
      model.total(), what, 100 * model.accuracy(), 100 * baseline.accuracy());
  s += "Transformer (test split):\n" + model.str() + "\n";
  s += "Naive Bayes baseline (same split):\n" + baseline.str();
  return s;
}

}  // namespace tgx::cls
