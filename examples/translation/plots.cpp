// examples/translation/plots.cpp — loss curves and attention heatmaps (see plots.hpp).
#include "translation/plots.hpp"

#include "autograd/tape.hpp"
#include "common/png.hpp"
#include "translation/decode.hpp"

#include <fmt/format.h>

#include <filesystem>

namespace tgx::translation {

using tg::Tensor;

std::vector<std::string> write_curves(const TrainLog& log, const std::string& out_dir) {
  std::vector<std::string> paths;
  if (!log.steps.empty()) {
    PlotOptions o;
    o.title = "translation: training loss (label-smoothed cross-entropy)";
    o.xlabel = "step";
    o.ylabel = "loss";
    o.log_y = true;
    paths.push_back(out_dir + "/loss.png");
    write_png(paths.back(), line_plot({Series{"train loss", log.steps, log.losses}}, o));
  }
  if (!log.valid_steps.empty()) {
    PlotOptions o;
    o.title = "translation: validation exact match (greedy)";
    o.xlabel = "step";
    o.ylabel = "exact match %";
    o.y_max = 100;
    o.x_min = 0;  // the same step axis as the loss plot
    o.x_max = log.steps.empty() ? NAN : log.steps.back();
    paths.push_back(out_dir + "/validation.png");
    write_png(
        paths.back(),
        line_plot({Series{"validation", log.valid_steps, log.valid_exact, {214, 39, 40}}}, o));
  }
  return paths;
}

namespace {

// One (rows, cols) slice of w (B = 1, NH, rows, cols) for head h, or the mean over heads (h < 0).
std::vector<double> head_slice(const Tensor& w, int64_t h) {
  int64_t NH = w.size(1), R = w.size(2), C = w.size(3);
  std::vector<double> all = w.to_vector<double>(), out(static_cast<size_t>(R * C), 0.0);
  for (int64_t k = 0; k < NH; ++k) {
    if (h >= 0 && k != h) continue;
    for (int64_t i = 0; i < R * C; ++i) out[i] += all[k * R * C + i] / (h >= 0 ? 1.0 : NH);
  }
  return out;
}

std::string write_map(const std::string& path, const Tensor& w, int64_t h, const std::string& title,
                      const std::vector<std::string>& rows, const std::vector<std::string>& cols) {
  HeatmapOptions o;
  o.title = title;
  o.row_labels = rows;
  o.col_labels = cols;
  o.vmin = 0;
  o.vmax = 1;
  write_png(path, heatmap(head_slice(w, h), static_cast<int>(rows.size()),
                          static_cast<int>(cols.size()), o));
  return path;
}

}  // namespace

std::vector<std::string> write_attention(Seq2Seq& model, const Vocabs& v,
                                         const std::vector<std::string>& src,
                                         const std::vector<std::string>& out,
                                         const std::string& dir, bool all_layers) {
  std::filesystem::create_directories(dir);
  std::vector<int64_t> s = v.src.encode(src, "attention input");
  s.push_back(Vocab::kEos);
  std::vector<int64_t> t = {Vocab::kBos};
  for (int64_t id : v.tgt.encode(out, "attention output")) t.push_back(id);
  std::vector<std::string> src_labels = src, in_labels = {"<bos>"}, out_labels = out;
  src_labels.push_back("<eos>");
  in_labels.insert(in_labels.end(), out.begin(), out.end());
  out_labels.push_back("<eos>");  // row i: attention while predicting output token i
  model.eval();
  model.transformer->set_need_weights(true, false);
  {
    tg::NoGradGuard no_grad;
    model.forward(pad_batch({s}), pad_batch({t}));
  }
  model.transformer->set_need_weights(false);
  auto enc = model.transformer->encoder->last_self_attn_weights();
  auto dec = model.transformer->decoder->last_self_attn_weights();
  auto cross = model.transformer->decoder->last_cross_attn_weights();
  std::vector<std::string> paths;
  paths.push_back(write_map(dir + "/cross_attention.png", cross.back(), -1,
                            "cross-attention, last decoder layer, mean over heads", out_labels,
                            src_labels));
  if (!all_layers) return paths;
  for (size_t l = 0; l < enc.size(); ++l)
    for (int64_t h = 0; h < enc[l].size(1); ++h)
      paths.push_back(write_map(fmt::format("{}/encoder_self_L{}_H{}.png", dir, l, h), enc[l], h,
                                fmt::format("encoder self-attention L{} H{}", l, h), src_labels,
                                src_labels));
  for (size_t l = 0; l < dec.size(); ++l)
    for (int64_t h = 0; h < dec[l].size(1); ++h) {
      paths.push_back(write_map(fmt::format("{}/decoder_self_L{}_H{}.png", dir, l, h), dec[l], h,
                                fmt::format("decoder self-attention L{} H{}", l, h), out_labels,
                                in_labels));
      paths.push_back(write_map(fmt::format("{}/cross_L{}_H{}.png", dir, l, h), cross[l], h,
                                fmt::format("cross-attention L{} H{}", l, h), out_labels,
                                src_labels));
    }
  return paths;
}

}  // namespace tgx::translation
