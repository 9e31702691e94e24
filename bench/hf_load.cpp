// bench/hf_load.cpp — loading a Hugging Face model folder (nn/hf) and generating from it:
// from_pretrained's wall time and the resident memory it adds (VmRSS, which counts the mapped
// file's pages once touched), set against the folder's safetensors bytes; the logits against
// the folder's reference_logits.safetensors (tools/make_hf_folder.py writes both); and greedy
// generation tokens/s with and without the KV cache. Prints `metric` lines as bench_tapegrad does.
//   bench_hf_load DIR [--new N] [--uncached-new N] [--threads N] [--dtype f32|bf16|f16]
//                 [--compute f32]
// --dtype: the parameters' dtype (default f32: a BF16 file widened); with --compute f32 too,
// weight-only reduced precision (bf16 parameters mapped in place, float32 activations and logits;
// nn/hf/pretrained.hpp's PretrainedOptions). Metric names carry the mode when it is not f32.
// --uncached-new N times the uncached generation over its first N tokens only (default: --new).
// Each uncached step reruns the whole sequence, so later steps cost more: the uncached speed
// over N < --new tokens bounds its speed over --new from above, and the cached / uncached ratio
// is then a lower bound of the speedup at --new tokens.
// OpenMP's idle threads sleep (passive_openmp_wait), as in the examples: its loops and OpenBLAS's
// pool take turns on the same cores.
// Deliberately not here: tokenizers (the prompt is the reference's ids), sampling options.
#include "autograd/openmp_wait.hpp"
#include "nn/checkpoint.hpp"
#include "nn/hf/pretrained.hpp"
#include "tapegrad.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double rss_mb() {  // VmRSS of this process
  std::ifstream in("/proc/self/status");
  std::string key;
  while (in >> key) {
    if (key == "VmRSS:") {
      double kb;
      in >> kb;
      return kb / 1024;
    }
    in.ignore(1 << 16, '\n');
  }
  return 0;
}

double folder_mb(const std::string& dir) {
  double bytes = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    if (n.rfind("model", 0) == 0 && n.size() > 12 && n.substr(n.size() - 12) == ".safetensors")
      bytes += static_cast<double>(e.file_size());
  }
  return bytes / (1024 * 1024);
}

tg::DType parse_dtype(const std::string& s) {
  if (s == "f32") return tg::kFloat32;
  if (s == "bf16") return tg::kBFloat16;
  if (s == "f16") return tg::kFloat16;
  fmt::print(stderr, "bench_hf_load: dtype {} is not f32, bf16 or f16\n", s);
  std::exit(2);
}

void emit(const std::string& name, double v, const char* unit) {
  fmt::print("metric {} {:.6g} {}\n", name, v, unit);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  tg::passive_openmp_wait(argv);  // idle OpenMP threads sleep (openmp_wait.hpp says why)
  if (argc < 2) {
    fmt::print(stderr,
               "usage: bench_hf_load DIR [--new N] [--uncached-new N] [--threads N] "
               "[--dtype f32|bf16|f16] [--compute f32]\n");
    return 2;
  }
  const std::string dir = argv[1];
  int64_t n_new = 256, n_uncached = -1;
  tg::nn::hf::PretrainedOptions opts;
  std::string mode;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--new") n_new = std::atoll(argv[i + 1]);
    if (a == "--uncached-new") n_uncached = std::atoll(argv[i + 1]);
    if (a == "--threads") tg::set_num_threads(std::atoi(argv[i + 1]));
    if (a == "--dtype") opts.dtype = parse_dtype(argv[i + 1]);
    if (a == "--compute") opts.compute_dtype = parse_dtype(argv[i + 1]);
    if (a == "--dtype" || a == "--compute")
      mode += std::string(" ") + a.substr(2) + " " + argv[i + 1];
  }
  if (n_uncached < 0) n_uncached = n_new;
  const std::string tag = std::filesystem::path(dir).filename().string() + mode;
  const double file = folder_mb(dir), rss0 = rss_mb();
  auto t0 = Clock::now();
  auto model = tg::nn::hf::from_pretrained(dir, opts);
  const double load_s = seconds_since(t0), rss1 = rss_mb();
  model->eval();
  emit("hf_load " + tag + " load s", load_s, "s");
  emit("hf_load " + tag + " file MB", file, "MB");
  emit("hf_load " + tag + " added RSS after load / file", (rss1 - rss0) / file, "x");

  tg::nn::SafetensorsFile ref = tg::nn::load_safetensors(dir + "/reference_logits.safetensors");
  const tg::Tensor ids = ref.tensors.at("ids"), want = ref.tensors.at("logits");
  tg::Tensor got;
  {
    tg::NoGradGuard ng;
    got = model->forward(ids);
  }
  emit("hf_load " + tag + " added RSS after a forward / file", (rss_mb() - rss0) / file, "x");
  const tg::Tensor diff = tg::abs(tg::sub(got.to(tg::kFloat32), want));
  const double maxdiff = tg::max(diff).item<float>(), scale = tg::max(tg::abs(want)).item<float>();
  emit("hf_load " + tag + " logits max |diff| / max |ref|", maxdiff / scale, "rel");

  tg::nn::hf::GenerationOptions cached, uncached;
  uncached.use_cache = false;
  t0 = Clock::now();
  tg::Tensor a = model->generate(ids, n_new, cached);
  const double tps_cached = static_cast<double>(n_new) / seconds_since(t0);
  emit("hf_load " + tag + fmt::format(" generate {} tokens, KV cache tok/s", n_new), tps_cached,
       "tok/s");
  t0 = Clock::now();
  tg::Tensor b = model->generate(ids, n_uncached, uncached);
  const double tps_uncached = static_cast<double>(n_uncached) / seconds_since(t0);
  const bool same =
      tg::narrow(a, 1, 0, b.size(1)).contiguous().to_vector<int64_t>() == b.to_vector<int64_t>();
  emit("hf_load " + tag + fmt::format(" generate {} tokens, no cache tok/s", n_uncached),
       tps_uncached, "tok/s");
  emit("hf_load " + tag +
           (n_uncached < n_new ? " cached / uncached speed (lower bound)"
                               : " cached / uncached speed"),
       tps_cached / tps_uncached, "x");
  emit("hf_load " + tag + " cached tokens equal uncached", same ? 1 : 0, "bool");
  return same ? 0 : 1;
}
