// nn/hf/pretrained.cpp — generation, save_pretrained and from_pretrained (see pretrained.hpp).
#include "nn/hf/pretrained.hpp"

#include "autograd/io.hpp"
#include "autograd/tape.hpp"
#include "nn/checkpoint.hpp"
#include "nn/hf/config.hpp"
#include "nn/hf/gpt2.hpp"
#include "nn/hf/llama.hpp"
#include "ops/ops.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <random>

namespace tg::nn::hf {

namespace {

// The next token of one row from its logits (V): argmax, or a draw from softmax(logits / t)
// over the top_k most likely.
int64_t pick(const double* logits, int64_t V, const GenerationOptions& o, std::mt19937_64& rng) {
  if (o.temperature <= 0) return std::max_element(logits, logits + V) - logits;
  std::vector<int64_t> idx(static_cast<size_t>(V));
  std::iota(idx.begin(), idx.end(), 0);
  int64_t k = o.top_k > 0 ? std::min(o.top_k, V) : V;
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(),
                    [&](int64_t a, int64_t b) { return logits[a] > logits[b]; });
  std::vector<double> p(static_cast<size_t>(k));
  const double top = logits[idx[0]];
  double sum = 0;
  for (int64_t i = 0; i < k; ++i) sum += p[i] = std::exp((logits[idx[i]] - top) / o.temperature);
  double u = std::uniform_real_distribution<double>(0, sum)(rng);
  for (int64_t i = 0; i < k; ++i)
    if ((u -= p[i]) < 0) return idx[i];
  return idx[k - 1];
}

}  // namespace

std::shared_ptr<Linear> lm_head_tied_to(const Tensor& embedding) {
  auto head = std::make_shared<Linear>(embedding.size(1), 1, false);
  head->weight = embedding;
  head->out_features = embedding.size(0);
  return head;
}

Tensor PreTrainedModel::generate(const Tensor& ids, int64_t max_new_tokens,
                                 const GenerationOptions& o) {
  if (!ids.defined() || ids.dim() != 2 || ids.dtype() != kInt64 || ids.size(1) < 1)
    throw Error(fmt::format("{}::generate: input_ids {} must be int64 (B, T) with T >= 1",
                            type_name(), ids.defined() ? shape_str(ids.shape()) : "undefined"));
  const int64_t B = ids.size(0), T = ids.size(1), V = vocab_size();
  if (max_new_tokens < 0 || T + max_new_tokens > max_positions())
    throw Error(
        fmt::format("{}::generate: {} prompt + {} new tokens exceed the model's {} "
                    "positions",
                    type_name(), T, max_new_tokens, max_positions()));
  NoGradGuard ng;
  std::vector<KVCache> caches;
  if (o.use_cache)
    for (int64_t i = 0; i < num_layers(); ++i) caches.emplace_back(T + max_new_tokens);
  std::vector<KVCache>* cache = o.use_cache ? &caches : nullptr;
  std::mt19937_64 rng(o.seed);
  std::vector<bool> done(static_cast<size_t>(B), false);
  Tensor seq = ids;
  Tensor logits = max_new_tokens ? forward(ids, cache) : Tensor();
  for (int64_t step = 0; step < max_new_tokens; ++step) {
    Tensor last = select(logits, 1, logits.size(1) - 1).contiguous().to(kFloat64);  // (B, V)
    Tensor next = Tensor::empty({B, 1}, kInt64);
    for (int64_t b = 0; b < B; ++b) {  // a finished row is padded with eos (Hugging Face's pad)
      next.data<int64_t>()[b] =
          done[b] ? *o.eos_token_id : pick(last.data<double>() + b * V, V, o, rng);
      if (o.eos_token_id && next.data<int64_t>()[b] == *o.eos_token_id) done[b] = true;
    }
    seq = cat({seq, next}, 1);
    if (std::all_of(done.begin(), done.end(), [](bool d) { return d; })) break;
    if (step + 1 < max_new_tokens) logits = o.use_cache ? forward(next, cache) : forward(seq);
  }
  return seq;
}

void PreTrainedModel::save_pretrained(const std::string& folder, bool overwrite) const {
  namespace fs = std::filesystem;
  const std::string config = folder + "/config.json", weights = folder + "/model.safetensors",
                    index = folder + "/model.safetensors.index.json";
  if (!overwrite)
    for (const std::string& p : {config, weights, index})
      if (fs::exists(p))
        throw Error(
            fmt::format("save_pretrained: {} exists (pass overwrite = true to replace the "
                        "folder's model)",
                        p));
  StateDict sd;
  const std::vector<std::string> tied = tied_names();
  DType dtype = kFloat32;
  for (const auto& [name, t] : state_dict()) {
    if (std::find(tied.begin(), tied.end(), name) != tied.end()) continue;
    sd.insert(name, t);
    dtype = t.dtype();
  }
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec) throw Error(fmt::format("save_pretrained: cannot create {}: {}", folder, ec.message()));
  save_safetensors(weights, sd, {{"format", "pt"}});
  write_file_atomic(config, config_json(dtype_name(dtype)));  // torch_dtype: "bfloat16", ...
  if (fs::exists(index)) fs::remove(index);  // the shards it names are no longer the model
}

std::shared_ptr<PreTrainedModel> from_pretrained(const std::string& folder, DType dtype) {
  return from_pretrained(folder, PretrainedOptions{dtype, std::nullopt});
}

std::shared_ptr<PreTrainedModel> from_pretrained(const std::string& folder,
                                                 const PretrainedOptions& options) {
  const std::string type = config_model_type(read_config_text(folder), folder + "/config.json");
  if (type == "gpt2") return GPT2LMHeadModel::from_pretrained(folder, options);
  return LlamaForCausalLM::from_pretrained(folder, options);
}

std::optional<DType> weight_only_compute(const PretrainedOptions& o, const char* who) {
  if (!o.compute_dtype || *o.compute_dtype == o.dtype) return std::nullopt;
  if (*o.compute_dtype == kFloat32 && is_reduced(o.dtype)) return kFloat32;
  throw Error(fmt::format(
      "{}: dtype {} with compute_dtype {} is not supported (a compute_dtype other than dtype is "
      "float32 with bfloat16 or float16 parameters: weight-only reduced precision)",
      who, dtype_name(o.dtype), dtype_name(*o.compute_dtype)));
}

}  // namespace tg::nn::hf
