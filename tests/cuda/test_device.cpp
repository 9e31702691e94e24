// tests/cuda/test_device.cpp — the device model on a GPU: to()/cpu()/cuda() and their gradient,
// mixed-device errors naming the op and both devices, item/str/to_vector through host copies,
// the caching allocator's counters, modules and optimizers on the GPU, checkpoints across
// devices, and a training smoke test whose losses match the CPU run.
#include "tests/cuda/parity_harness.hpp"

#include "nn/checkpoint.hpp"
#include "nn/clip.hpp"
#include "nn/layers.hpp"
#include "nn/optim.hpp"
#include "nn/transformer.hpp"

#include <memory>

using namespace tg;

TEST_CASE("cuda device: to, cpu, cuda round trip and its gradient") {
  Tensor x = tensor(std::vector<float>{1, -2, 3.5f}).requires_grad_();
  Tensor g = x.cuda();
  CHECK(g.device() == cuda_device(0));
  CHECK(g.is_cuda());
  CHECK(g.to_vector<float>() == std::vector<float>{1, -2, 3.5f});
  CHECK(g.cpu().device() == kCPU);
  CHECK(mul(g, 2.0).sum().item<double>() == Approx(5.0));
  sum(mul(g, g)).backward();
  CHECK(x.grad().device() == kCPU);
  CHECK(x.grad().to_vector<float>() == std::vector<float>{2, -4, 7});
  CHECK(g.str().find("device=cuda:0") != std::string::npos);
  CHECK(zeros({2, 3}, kFloat64, cuda_device()).sum().item<double>() == 0);
  CHECK(full({4}, 2.5, kFloat32, cuda_device()).to_vector<float>() == std::vector<float>(4, 2.5f));
  CHECK(randn({3}, kFloat32, cuda_device()).device() == cuda_device());
  CHECK(parse_device("cuda:0") == cuda_device(0));
}

TEST_CASE("cuda device: mixing devices is an error naming the op and both devices") {
  Tensor a = ones({2, 3}), b = ones({2, 3}).cuda();
  CHECK_THROWS_WITH(add(a, b),
                    Catch::Contains("add") && Catch::Contains("cpu") && Catch::Contains("cuda:0"));
  CHECK_THROWS_WITH(matmul(b, ones({3, 2})), Catch::Contains("matmul") &&
                                                 Catch::Contains("cuda:0") &&
                                                 Catch::Contains("cpu"));
  CHECK_THROWS_WITH(b.data<float>(), Catch::Contains("cuda:0") && Catch::Contains(".cpu()"));
  CHECK_THROWS_WITH(ones({2}).to(cuda_device(cuda_device_count())),
                    Catch::Contains("not available"));
}

TEST_CASE("cuda device: bad indices are reported with the CPU's message") {
  Tensor w = randn({5, 3}).cuda();
  Tensor idx = tensor(std::vector<int64_t>{1, 7, 2}).cuda();
  CHECK_THROWS_WITH(embedding(idx, w), Catch::Contains("index 7") && Catch::Contains("V = 5"));
  Tensor t = tensor(std::vector<int64_t>{0, 9}).cuda();
  CHECK_THROWS_WITH(cross_entropy(randn({2, 4}).cuda(), t), Catch::Contains("target class 9"));
}

TEST_CASE("cuda allocator: blocks are reused, usage and peak are reported") {
  cuda_synchronize();
  { Tensor warm = Tensor::empty({256, 1024}, kFloat32, cuda_device()); }  // one block cached
  CudaMemory before = cuda_memory();
  for (int i = 0; i < 10; ++i) {
    Tensor t = Tensor::empty({256, 1024}, kFloat32, cuda_device());
    CHECK(cuda_memory().allocated >= before.allocated + 256 * 1024 * 4);
  }
  CudaMemory after = cuda_memory();
  CHECK(after.device_mallocs == before.device_mallocs);  // every request served from the cache
  CHECK(after.allocated == before.allocated);
  CHECK(after.peak_allocated >= before.allocated + 256 * 1024 * 4);
  cuda_empty_cache();
  CHECK(cuda_memory().reserved == cuda_memory().allocated);
}

namespace {
// A tiny classifier: embedding, one pre-norm encoder layer, mean pooling, linear.
struct Tiny : nn::Module {
  std::shared_ptr<nn::Embedding> emb;
  std::shared_ptr<nn::TransformerEncoderLayer> layer;
  std::shared_ptr<nn::Linear> head;
  Tiny() : nn::Module("Tiny") {
    nn::TransformerLayerOptions o;
    o.dim_feedforward = 64;
    o.dropout = 0.0;
    o.batch_first = true;
    o.norm_first = true;
    emb = register_module("emb", std::make_shared<nn::Embedding>(50, 32));
    layer = register_module("layer", std::make_shared<nn::TransformerEncoderLayer>(32, 4, o));
    head = register_module("head", std::make_shared<nn::Linear>(32, 3));
  }
  // pad (B, T) bool, True = padding: the key padding mask of the self-attention.
  Tensor forward(const Tensor& tokens, const Tensor& pad) {
    return (*head)(mean(layer->forward((*emb)(tokens), Tensor(), pad), {1}));
  }
};
std::vector<double> train(Device dev, int steps) {
  manual_seed(7);
  Tiny m;
  m.to(dev);
  nn::AdamW opt(m.parameters(), nn::AdamWOptions(3e-3));
  manual_seed(8);
  Tensor x = randint(0, 50, {16, 12}).to(dev);
  Tensor y = randint(0, 3, {16}).to(dev);
  std::vector<bool> pv(16 * 12);
  for (int64_t b = 0; b < 16; ++b)
    for (int64_t t = 0; t < 12; ++t) pv[b * 12 + t] = t >= 12 - b % 4;  // 0 to 3 padded keys
  Tensor pad = tensor(pv, {16, 12}).to(dev);
  std::vector<double> losses;
  for (int s = 0; s < steps; ++s) {
    opt.zero_grad();
    Tensor loss = cross_entropy(m.forward(x, pad), y);
    loss.backward();
    nn::clip_grad_norm_(m.parameters(), 1.0);
    opt.step();
    losses.push_back(loss.item<double>());
  }
  return losses;
}
}  // namespace

TEST_CASE("cuda training smoke: the loss falls and matches the CPU run (with key padding)") {
  std::vector<double> cpu = train(kCPU, 20), gpu = train(cuda_device(), 20);
  CHECK(gpu.back() < 0.5 * gpu.front());
  for (size_t i = 0; i < cpu.size(); ++i) {
    INFO("step " << i << ": cpu " << cpu[i] << " gpu " << gpu[i]);
    CHECK(std::fabs(cpu[i] - gpu[i]) <= 2e-3 * (1 + std::fabs(cpu[i])));
  }
}

TEST_CASE("cuda Adam and AdamW: amsgrad, maximize and weight decay match the CPU step") {
  for (bool decoupled : {false, true})
    for (DType dt : {kFloat32, kFloat64}) {
      auto run = [&](Device dev) {
        manual_seed(3);
        Tensor p = randn({257}, dt).to(dev).requires_grad_();
        nn::AdamWOptions o(1e-2);
        o.amsgrad = true;
        o.maximize = true;
        o.weight_decay = 0.05;
        std::unique_ptr<nn::Optimizer> opt;
        if (decoupled)
          opt = std::make_unique<nn::AdamW>(std::vector<Tensor>{p}, o);
        else
          opt = std::make_unique<nn::Adam>(std::vector<Tensor>{p}, o);
        for (int s = 0; s < 4; ++s) {
          opt->zero_grad();
          // A gradient that shrinks after step 1, so amsgrad's running max is what gets read.
          sum(mul(mul(p, p), s == 0 ? 4.0 : 0.25)).backward();
          opt->step();
        }
        return p.detach().cpu().to(kFloat64).to_vector<double>();
      };
      const std::vector<double> cpu = run(kCPU), gpu = run(cuda_device());
      const double tol = dt == kFloat32 ? 2e-6 : 1e-12;
      INFO((decoupled ? "AdamW " : "Adam ") << dtype_name(dt));
      REQUIRE(cpu.size() == gpu.size());
      for (size_t i = 0; i < cpu.size(); ++i) CHECK(std::fabs(cpu[i] - gpu[i]) <= tol);
    }
}

TEST_CASE("cuda checkpoints: a GPU module saves and loads into a CPU module") {
  manual_seed(1);
  nn::Linear a(4, 3), b(4, 3);
  a.to(cuda_device());
  std::string path = std::string(TG_BINARY_DIR) + "/cuda_ckpt.safetensors";
  nn::save_safetensors(path, a.state_dict());
  b.load_state_dict(nn::load_safetensors(path).tensors);
  CHECK(b.weight.to_vector<float>() == a.weight.to_vector<float>());
  b.to(cuda_device());
  a.load_state_dict(b.state_dict());  // GPU into GPU
  CHECK(a.weight.device() == cuda_device());
}
