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
// "both" (the default) runs each mode for one step in a forked child, so each peak RSS
// (ru_maxrss) is that mode's alone, then times the two alternately in one process (full, LoRA,
// full, ...: both see the same load from other jobs) and prints the median ratio of the pairs,
// in wall time and in CPU time (all threads; less sensitive to sharing the cores). Output: `metric
// <name> <value> <unit>` lines (bench/ harness.hpp's emit). Set OPENBLAS_CORETYPE as
// bench/README.md says on CPUs OpenBLAS does not recognise. Deliberately not here: loading a real
// checkpoint (nn/hf builds the full model).
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

// One mode's model, optimizer and batch; step() is one training step.
struct Rig {
  Rig(const Args& a, bool lora) : a(a), lora(lora), model(a) {
    if (lora) {
      nn::LoraConfig c;
      c.r = 8;
      c.lora_alpha = 16;
      c.target_modules = {"q_proj", "v_proj"};
      nn::apply_lora(model, c);
    }
    params = nn::trainable_parameters(model);
    opt = std::make_unique<nn::AdamW>(params, nn::AdamWOptions(1e-4));
    ids = randint(0, a.vocab, {a.batch, a.seq});
    targets = randint(0, a.vocab, {a.batch * a.seq});
  }
  void step() {
    opt->zero_grad();
    Tensor logits = model.forward(ids);
    cross_entropy(reshape(logits, {a.batch * a.seq, a.vocab}), targets).backward();
    opt->step();
  }
  int64_t trainable() const {
    int64_t n = 0;
    for (const Tensor& p : params) n += p.numel();
    return n;
  }
  const Args& a;
  bool lora;
  StackLM model;
  std::vector<Tensor> params;
  std::unique_ptr<nn::AdamW> opt;
  Tensor ids, targets;
};

// Wall and CPU seconds of one call of f.
std::pair<double, double> timed(const std::function<void()>& f) {
  const double c0 = cpu_seconds();
  const double w = tgbench::time_batch(f, 1);
  return {w, cpu_seconds() - c0};
}

// One mode alone in this process: a warm-up step, `steps` timed steps, the peak RSS.
struct Alone {
  double step_s = 0, cpu_s = 0, peak_mib = 0;
};
Alone run_mode(const Args& a, bool lora) {
  manual_seed(1);
  Rig rig(a, lora);
  rig.step();
  if (a.profile) {
    Profiler prof;
    rig.step();
    fmt::print("# {} step, per op kind:\n{}", lora ? "LoRA" : "full", prof.table(16));
  }
  std::vector<double> wall, cpu;
  for (int64_t i = 0; i < a.steps; ++i) {
    auto [w, c] = timed([&] { rig.step(); });
    wall.push_back(w);
    cpu.push_back(c);
  }
  const std::string m = lora ? "lora" : "full";
  Alone r{tgbench::median(wall), tgbench::median(cpu), maxrss_mib()};
  tgbench::emit("lora_bench_" + m + "_trainable_params", static_cast<double>(rig.trainable()),
                "params");
  tgbench::emit("lora_bench_" + m + "_step_alone", r.step_s, "s");
  tgbench::emit("lora_bench_" + m + "_peak_rss", r.peak_mib, "MiB");
  return r;
}

// Both models in this process, their steps alternated (full, LoRA, full, ...) so that both see
// the same load from other jobs; the ratio of each pair, median over pairs.
void run_interleaved(const Args& a) {
  manual_seed(1);
  Rig full(a, false), lora(a, true);
  full.step();
  lora.step();
  std::vector<double> fw, lw, wall_ratio, cpu_ratio;
  for (int64_t i = 0; i < a.steps; ++i) {
    auto [f, fc] = timed([&] { full.step(); });
    auto [l, lc] = timed([&] { lora.step(); });
    fw.push_back(f);
    lw.push_back(l);
    wall_ratio.push_back(l / f);
    cpu_ratio.push_back(lc / fc);
  }
  tgbench::emit("lora_bench_full_step", tgbench::median(fw), "s");
  tgbench::emit("lora_bench_lora_step", tgbench::median(lw), "s");
  tgbench::emit("lora_bench_step_ratio", tgbench::median(wall_ratio), "x");
  tgbench::emit("lora_bench_step_cpu_ratio", tgbench::median(cpu_ratio), "x");
}

// Runs one mode in a forked child (a fresh peak RSS) and reads its result through a pipe.
Alone run_child(const Args& a, bool lora) {
  int fd[2];
  if (pipe(fd) != 0) throw Error("bench_lora: pipe failed");
  const pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    Alone r = run_mode(a, lora);
    const bool ok = write(fd[1], &r, sizeof r) == static_cast<ssize_t>(sizeof r);
    _exit(ok ? 0 : 1);
  }
  close(fd[1]);
  Alone r;
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
    Args one = a;  // the children measure peak RSS (and a first timing) on one step
    one.steps = 1;
    const Alone full = run_child(one, false), lora = run_child(one, true);
    tgbench::emit("lora_bench_peak_rss_ratio", lora.peak_mib / full.peak_mib, "x");
    run_interleaved(a);
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}\n", e.what());
    return 1;
  }
  return 0;
}
