// bench/lora.cpp — bench_lora: one training step of a Llama-style language model, full
// fine-tuning against LoRA (r 8 on q_proj and v_proj, PEFT's usual choice), in step time and
// peak RSS. The model has SmolLM-135M's block (d 576, 9 query / 3 key-value heads, SwiGLU 1536,
// RMSNorm eps 1e-5, tied 49,152-token embedding) with --layers of them (30 is the whole model);
// the loss is cross-entropy on random tokens (B 4, T 256 by default), the optimizer AdamW over
// every trainable parameter.
//
//   bench_lora [--layers N] [--vocab V] [--batch B] [--seq T] [--steps K] [--mode full|lora|both]
//              [--profile 1]
//
// "both" (the default) runs each mode in a forked child, so each peak RSS (ru_maxrss) is that
// mode's alone, and prints the ratios. Output: `metric <name> <value> <unit>` lines (bench/
// harness.hpp's emit). Set OPENBLAS_CORETYPE as bench/README.md says on CPUs OpenBLAS does not
// recognise. Deliberately not here: loading a real checkpoint (nn/hf builds the full model).
#include "harness.hpp"

#include "nn/llama.hpp"
#include "nn/lora.hpp"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

using namespace tg;

namespace {

struct Args {
  int64_t layers = 4, vocab = 49152, batch = 4, seq = 256, steps = 3;
  std::string mode = "both";
  bool profile = false;  // --profile 1: print tg::Profiler's table of one step per mode
};

// embed_tokens -> layers -> norm -> logits through the tied embedding (Hugging Face's names).
class StackLM : public nn::Module {
 public:
  StackLM(const Args& a) : nn::Module("StackLM") {
    nn::LlamaDecoderLayerOptions o;
    o.intermediate_size = 1536;
    o.rms_norm_eps = 1e-5;
    o.attention.num_kv_heads = 3;
    o.attention.max_positions = a.seq;
    embed_tokens = register_module("embed_tokens", std::make_shared<nn::Embedding>(a.vocab, 576));
    layers = register_module("layers", std::make_shared<nn::ModuleList>());
    for (int64_t i = 0; i < a.layers; ++i)
      layers->push_back(std::make_shared<nn::LlamaDecoderLayer>(576, 9, o));
    norm = register_module("norm", std::make_shared<nn::RMSNorm>(576, 1e-5));
  }
  Tensor forward(const Tensor& ids) {  // ids (B, T) -> logits (B, T, V)
    Tensor h = embed_tokens->forward(ids);
    for (const auto& l : *layers)
      h = std::static_pointer_cast<nn::LlamaDecoderLayer>(l)->forward(h);
    return linear(norm->forward(h), embed_tokens->weight);
  }
  std::shared_ptr<nn::Embedding> embed_tokens;
  std::shared_ptr<nn::ModuleList> layers;
  std::shared_ptr<nn::RMSNorm> norm;
};

double maxrss_mib() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;  // KiB on Linux
}

// CPU seconds of this process (every thread), user and system.
double cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * t.tv_usec; };
  return s(ru.ru_utime) + s(ru.ru_stime);
}

// Median wall and CPU seconds per step (CPU time counts the work even when other jobs share
// the cores), and the peak RSS.
struct Result {
  double step_s = 0, cpu_s = 0, peak_mib = 0;
};

// Builds the model, applies LoRA when asked, and times `steps` steps after one warm-up step.
Result run_mode(const Args& a, bool lora) {
  manual_seed(1);
  StackLM model(a);
  if (lora) {
    nn::LoraConfig c;
    c.r = 8;
    c.lora_alpha = 16;
    c.target_modules = {"q_proj", "v_proj"};
    nn::apply_lora(model, c);
  }
  const std::vector<Tensor> params = nn::trainable_parameters(model);
  int64_t n = 0;
  for (const Tensor& p : params) n += p.numel();
  nn::AdamW opt(params, nn::AdamWOptions(1e-4));
  Tensor ids = randint(0, a.vocab, {a.batch, a.seq});
  Tensor targets = randint(0, a.vocab, {a.batch * a.seq});
  auto step = [&] {
    opt.zero_grad();
    Tensor logits = model.forward(ids);
    Tensor loss = cross_entropy(reshape(logits, {a.batch * a.seq, a.vocab}), targets);
    loss.backward();
    opt.step();
  };
  step();
  if (a.profile) {
    Profiler prof;
    step();
    fmt::print("# {} step, per op kind:\n{}", lora ? "LoRA" : "full", prof.table(16));
    std::fflush(stdout);
  }
  std::vector<double> times, cpu;
  for (int64_t i = 0; i < a.steps; ++i) {
    const double c0 = cpu_seconds();
    times.push_back(tgbench::time_batch(step, 1));
    cpu.push_back(cpu_seconds() - c0);
  }
  const std::string m = lora ? "lora" : "full";
  Result r{tgbench::median(times), tgbench::median(cpu), maxrss_mib()};
  tgbench::emit("lora_bench_" + m + "_trainable_params", static_cast<double>(n), "params");
  tgbench::emit("lora_bench_" + m + "_step", r.step_s, "s");
  tgbench::emit("lora_bench_" + m + "_step_cpu", r.cpu_s, "s");
  tgbench::emit("lora_bench_" + m + "_peak_rss", r.peak_mib, "MiB");
  return r;
}

// Runs one mode in a forked child (a fresh peak RSS) and reads its result through a pipe.
Result run_child(const Args& a, bool lora) {
  int fd[2];
  if (pipe(fd) != 0) throw Error("bench_lora: pipe failed");
  const pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    Result r = run_mode(a, lora);
    const bool ok = write(fd[1], &r, sizeof r) == static_cast<ssize_t>(sizeof r);
    _exit(ok ? 0 : 1);
  }
  close(fd[1]);
  Result r;
  const bool ok = read(fd[0], &r, sizeof r) == static_cast<ssize_t>(sizeof r);
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!ok || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw Error(fmt::format("bench_lora: the {} child failed", lora ? "lora" : "full"));
  return r;
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (i + 1 >= argc) throw Error(fmt::format("bench_lora: {} needs a value", k));
    const std::string v = argv[++i];
    if (k == "--layers")
      a.layers = std::stoll(v);
    else if (k == "--vocab")
      a.vocab = std::stoll(v);
    else if (k == "--batch")
      a.batch = std::stoll(v);
    else if (k == "--seq")
      a.seq = std::stoll(v);
    else if (k == "--steps")
      a.steps = std::stoll(v);
    else if (k == "--profile")
      a.profile = v == "1";
    else if (k == "--mode" && (v == "full" || v == "lora" || v == "both"))
      a.mode = v;
    else
      throw Error(fmt::format("bench_lora: unknown option {} {}", k, v));
  }
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Args a = parse(argc, argv);
    fmt::print(
        "# bench_lora: {} layers of d 576, 9/3 heads, SwiGLU 1536, vocab {}, B {}, T {}, "
        "median of {} steps\n",
        a.layers, a.vocab, a.batch, a.seq, a.steps);
    std::fflush(stdout);  // before fork: the children must not inherit the buffered line
    if (a.mode != "both") {
      run_mode(a, a.mode == "lora");
      return 0;
    }
    const Result full = run_child(a, false), lora = run_child(a, true);
    tgbench::emit("lora_bench_step_ratio", lora.step_s / full.step_s, "x");
    tgbench::emit("lora_bench_step_cpu_ratio", lora.cpu_s / full.cpu_s, "x");
    tgbench::emit("lora_bench_peak_rss_ratio", lora.peak_mib / full.peak_mib, "x");
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}\n", e.what());
    return 1;
  }
  return 0;
}
