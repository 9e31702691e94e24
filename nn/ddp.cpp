// nn/ddp.cpp — DistributedDataParallel: the consistency check and broadcast at
// construction, the buckets, the gradient hooks that launch their all-reduce (or reduce-scatter),
// and the end-of-backward callback that waits and writes the averages back.
#include "nn/ddp.hpp"

#include "autograd/tape.hpp"
#include "nn/dist/dist.hpp"
#include "nn/flat_copy.hpp"

#include <fmt/format.h>

#include <chrono>
#include <sstream>

namespace tg::nn {

namespace ddetail = tg::nn::detail;

struct DistributedDataParallel::Reducer {
  DDPOptions opts;
  int world = 1, rank = 0;
  struct Param {
    Tensor t;
    std::string name;
    int bucket = 0;
    int64_t offset = 0;
    bool ready = false;
  };
  struct Bucket {
    std::vector<int> params;
    int64_t numel = 0;  // padded under zero1
    Tensor flat;        // (numel) gradients, then their average
    Tensor shard;       // zero1: (numel / world) this rank's averaged slice
    int pending = 0;
    tg::dist::Work work;
    bool launched = false;
  };
  std::vector<Param> params;
  std::vector<Bucket> buckets;
  bool sync = true;
  bool in_backward = false;
  int next_bucket = 0;
  Stats stats;

  // Buckets of the parameters that require grad, in reverse registration order (the order their
  // gradients arrive), one dtype and device each, about bucket_cap_mb each; zeroed flat buffers.
  void make_buckets(const Module& m) {
    const auto named = m.named_parameters();
    const int64_t cap = static_cast<int64_t>(opts.bucket_cap_mb * 1024 * 1024);
    int64_t bytes = 0;
    for (auto it = named.rbegin(); it != named.rend(); ++it) {
      const Tensor& t = it->second;
      if (!t.requires_grad()) continue;
      const bool fresh = buckets.empty() || bytes >= cap ||
                         params[buckets.back().params.back()].t.dtype() != t.dtype() ||
                         params[buckets.back().params.back()].t.device() != t.device();
      if (fresh) {
        buckets.emplace_back();
        bytes = 0;
      }
      Bucket& k = buckets.back();
      Param p;
      p.t = t;
      p.name = it->first;
      p.bucket = static_cast<int>(buckets.size()) - 1;
      p.offset = k.numel;
      k.numel += t.numel();
      k.params.push_back(static_cast<int>(params.size()));
      params.push_back(p);
      bytes += t.numel() * static_cast<int64_t>(dtype_size(t.dtype()));
    }
    for (Bucket& k : buckets) {
      const Tensor& first = params[k.params.front()].t;
      if (opts.zero1) k.numel = (k.numel + world - 1) / world * world;
      k.flat = zeros({k.numel}, first.dtype(), first.device());
      if (opts.zero1) k.shard = zeros({k.numel / world}, first.dtype(), first.device());
    }
  }

  void launch(int b, bool at_end) {
    Bucket& k = buckets[b];
    k.launched = true;
    if (opts.zero1)
      k.work = tg::dist::reduce_scatter_tensor_async(k.shard, k.flat, tg::dist::ReduceOp::Avg);
    else
      k.work = tg::dist::all_reduce_async(k.flat, tg::dist::ReduceOp::Avg);
    ++(at_end ? stats.launched_at_end : stats.launched_in_backward);
  }
  void launch_ready(bool at_end) {
    while (next_bucket < static_cast<int>(buckets.size()) && buckets[next_bucket].pending == 0)
      launch(next_bucket++, at_end);
  }
  void reset() {
    for (Param& p : params) p.ready = false;
    for (Bucket& k : buckets) {
      k.pending = static_cast<int>(k.params.size());
      k.launched = false;
      k.work = tg::dist::Work();
    }
    next_bucket = 0;
    in_backward = false;
  }
  // The gradient of p (accumulated, or zeros when it has none) into its bucket.
  void stage(Param& p) {
    Bucket& k = buckets[p.bucket];
    Tensor g = p.t.grad();
    if (g.defined())
      ddetail::copy_elems(k.flat, p.offset, g, 0, p.t.numel());
    else
      ddetail::fill_zeros(k.flat, p.offset, p.t.numel());
    p.ready = true;
    --k.pending;
  }

  void on_grad_ready(int i, const std::shared_ptr<Reducer>& self) {
    if (!sync) return;
    if (!in_backward) {
      in_backward = true;
      std::weak_ptr<Reducer> weak = self;
      tg::queue_backward_callback([weak](bool ok) {
        if (auto r = weak.lock()) r->finish(ok);
      });
    }
    Param& p = params[i];
    if (p.ready)
      throw Error(
          fmt::format("DistributedDataParallel: parameter '{}' became ready twice in one "
                      "backward",
                      p.name));
    stage(p);
    launch_ready(false);
  }

  void finish(bool ok) {
    if (!ok) {  // the walk threw: drop this backward's state (collectives already launched
      // complete on every rank that launched them; the others time out and abort).
      for (Bucket& k : buckets)
        if (k.launched) k.work.wait();
      reset();
      return;
    }
    std::vector<std::string> unused;
    for (Param& p : params)
      if (!p.ready) unused.push_back(p.name);
    if (!unused.empty() && !opts.find_unused_parameters) {
      for (Bucket& k : buckets)
        if (k.launched) k.work.wait();
      reset();
      std::string names;
      for (size_t i = 0; i < unused.size() && i < 8; ++i) names += (i ? ", " : "") + unused[i];
      if (unused.size() > 8) names += fmt::format(", ... ({} in all)", unused.size());
      throw Error(fmt::format(
          "DistributedDataParallel: {} parameter(s) that require grad received no gradient in "
          "this backward: {}; make every parameter take part in the loss, or construct with "
          "DDPOptions::find_unused_parameters = true",
          unused.size(), names));
    }
    for (Param& p : params)
      if (!p.ready) stage(p);
    launch_ready(true);
    auto t0 = std::chrono::steady_clock::now();
    for (Bucket& k : buckets) k.work.wait();
    stats.wait_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!opts.zero1) {
      for (Param& p : params) {
        Tensor g = p.t.grad();
        if (!g.defined()) {
          p.t.set_grad(zeros(p.t.shape(), p.t.dtype(), p.t.device()));
          g = p.t.grad();
        }
        ddetail::copy_elems(g, 0, buckets[p.bucket].flat, p.offset, p.t.numel());
      }
    }
    ++stats.syncs;
    reset();
  }
};

namespace {
std::string describe_state(const Module& m) {
  std::ostringstream os;
  for (const auto& [name, t] : m.named_parameters())
    os << "parameter " << name << ' ' << dtype_name(t.dtype()) << ' ' << shape_str(t.shape())
       << (t.requires_grad() ? "" : " (frozen)") << '\n';
  for (const auto& [name, t] : m.named_buffers())
    os << "buffer " << name << ' ' << dtype_name(t.dtype()) << ' ' << shape_str(t.shape()) << '\n';
  return os.str();
}
std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream is(s);
  for (std::string line; std::getline(is, line);) out.push_back(line);
  return out;
}

// Every rank must hold the same structure: compares each rank's list with rank 0's.
void check_same_model(const Module& m, int world) {
  const std::string mine = describe_state(m);
  const std::vector<std::string> all = tg::dist::all_gather_object(mine);
  const std::vector<std::string> ref = lines_of(all[0]);
  for (int k = 1; k < world; ++k) {
    const std::vector<std::string> other = lines_of(all[k]);
    for (size_t i = 0; i < std::max(ref.size(), other.size()); ++i) {
      const std::string a = i < ref.size() ? ref[i] : "(nothing)";
      const std::string b = i < other.size() ? other[i] : "(nothing)";
      if (a != b)
        throw Error(fmt::format(
            "DistributedDataParallel: the model differs across ranks at entry {}: rank 0 has {}, "
            "rank {} has {}",
            i, a, k, b));
    }
  }
}
}  // namespace

DistributedDataParallel::DistributedDataParallel(ModulePtr module, DDPOptions opts)
    : module_(std::move(module)), reducer_(std::make_shared<Reducer>()) {
  if (!module_) throw Error("DistributedDataParallel: the module is null");
  if (!(opts.bucket_cap_mb > 0))
    throw Error(fmt::format("DistributedDataParallel: bucket_cap_mb must be > 0, got {}",
                            opts.bucket_cap_mb));
  if (!tg::dist::is_initialized())
    throw Error("DistributedDataParallel: call tg::dist::init() first (run under mpirun -np N)");
  Reducer& r = *reducer_;
  r.opts = opts;
  r.world = tg::dist::world_size();
  r.rank = tg::dist::rank();

  check_same_model(*module_, r.world);
  {
    NoGradGuard ng;
    for (Tensor& t : module_->parameters()) {
      Tensor d = t.detach();
      tg::dist::broadcast(d, 0);
    }
    sync_buffers();
  }

  r.make_buckets(*module_);
  r.reset();
  std::weak_ptr<Reducer> weak = reducer_;
  for (size_t i = 0; i < r.params.size(); ++i) {
    const int idx = static_cast<int>(i);
    r.params[i].t.register_post_accumulate_grad_hook([weak, idx](const Tensor&) {
      if (auto red = weak.lock()) red->on_grad_ready(idx, red);
    });
  }
}

DistributedDataParallel::~DistributedDataParallel() = default;

const DDPOptions& DistributedDataParallel::options() const { return reducer_->opts; }

DistributedDataParallel::NoSync::NoSync(DistributedDataParallel& d)
    : d_(d), prev_(d.reducer_->sync) {
  d_.reducer_->sync = false;
}
DistributedDataParallel::NoSync::~NoSync() { d_.reducer_->sync = prev_; }
bool DistributedDataParallel::sync_enabled() const { return reducer_->sync; }

void DistributedDataParallel::sync_buffers() {
  NoGradGuard ng;
  for (Tensor& t : module_->buffers()) {
    Tensor d = t.detach();
    tg::dist::broadcast(d, 0);
  }
}

std::vector<DistributedDataParallel::BucketView> DistributedDataParallel::buckets() const {
  std::vector<BucketView> out;
  for (const Reducer::Bucket& k : reducer_->buckets) {
    BucketView v;
    v.numel = k.numel;
    v.reduced_shard = k.shard;
    for (int i : k.params) {
      const Reducer::Param& p = reducer_->params[i];
      v.segments.push_back({p.t, p.name, p.offset, p.t.numel()});
    }
    out.push_back(std::move(v));
  }
  return out;
}
int64_t DistributedDataParallel::num_buckets() const {
  return static_cast<int64_t>(reducer_->buckets.size());
}
DistributedDataParallel::Stats DistributedDataParallel::stats() const { return reducer_->stats; }
void DistributedDataParallel::reset_stats() { reducer_->stats = Stats(); }

}  // namespace tg::nn
