// autograd/hooks.cpp — what the walk calls besides the closures: gradient hooks (on a node's
// output or a leaf), post-accumulate-grad hooks (once per leaf per backward, after its last
// gradient) and the callbacks queued during a backward (queue_backward_callback). Registration is
// the tensor's (autograd/tensor.cpp); the walk itself is autograd/engine.cpp.
#include "autograd/engine_detail.hpp"
#include "autograd/grad_detail.hpp"

#include <fmt/format.h>

#include <atomic>

namespace tg {

namespace {
std::atomic<bool> g_any_post_hooks{false};  // set by the first registration; never cleared
// The callbacks queued by the backwards now running (nested ones share it), and how many run.
struct Callbacks {
  std::vector<std::function<void(bool)>> fns;
  int depth = 0;
};
thread_local Callbacks g_callbacks;
}  // namespace

namespace detail {
void note_post_accumulate_hook() { g_any_post_hooks.store(true); }
bool any_post_hooks() { return g_any_post_hooks.load(std::memory_order_relaxed); }

Tensor apply_hooks(const std::vector<GradHook>& hooks, Tensor g) {
  for (const auto& h : hooks) {
    Tensor r = h(g);
    if (r.defined()) {
      if (r.shape() != g.shape() || r.dtype() != g.dtype())
        throw Error(fmt::format("hook: returned gradient {} {} but the tensor's gradient is {} {}",
                                shape_str(r.shape()), dtype_name(r.dtype()), shape_str(g.shape()),
                                dtype_name(g.dtype())));
      g = r;
    }
  }
  return g;
}

// ---- post-accumulate-grad hooks ----
namespace {
void fire(PostHooks::Entry& e) {
  Tensor t(e.leaf);
  for (const PostAccumulateGradHook& h : e.leaf->post_acc_hooks) h(t);
}
}  // namespace

void PostHooks::add(const std::shared_ptr<TensorImpl>& leaf) {
  auto [it, fresh] = index.emplace(leaf.get(), entries.size());
  if (fresh) entries.push_back({leaf, 0, false});
  ++entries[it->second].remaining;
}
void PostHooks::done_slow(const TensorImpl* leaf, bool received) {
  auto it = index.find(leaf);
  if (it == index.end()) return;
  Entry& e = entries[it->second];
  e.received |= received;
  if (--e.remaining == 0 && e.received) fire(e);
}
void PostHooks::finish() {
  for (Entry& e : entries)
    if (e.remaining > 0 && e.received) {
      e.remaining = 0;
      fire(e);
    }
}
void PostHooks::count(const Tensor* roots, size_t n_roots) {
  active = true;
  std::vector<Node*> stack;
  std::unordered_map<const Node*, bool> seen;
  for (size_t r = 0; r < n_roots; ++r) {
    const Tensor& root = roots[r];
    if (!root.defined()) continue;
    if (Node* n = root.grad_fn()) {
      if (seen.emplace(n, true).second) stack.push_back(n);
    } else if (!root.impl()->post_acc_hooks.empty()) {
      add(root.impl_ptr());
    }
  }
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next) {
      if (e.leaf && !e.leaf->post_acc_hooks.empty()) add(e.leaf);
      if (e.node && seen.emplace(e.node.get(), true).second) stack.push_back(e.node.get());
    }
  }
}

// ---- backward callbacks ----
CallbackScope::CallbackScope() : base_(g_callbacks.fns.size()) { ++g_callbacks.depth; }
CallbackScope::~CallbackScope() { --g_callbacks.depth; }
void CallbackScope::drain(bool ok) {
  std::vector<std::function<void(bool)>>& q = g_callbacks.fns;
  while (q.size() > base_) {
    std::vector<std::function<void(bool)>> fns(q.begin() + base_, q.end());
    q.resize(base_);
    for (auto& fn : fns) fn(ok);
  }
}
}  // namespace detail

void queue_backward_callback(std::function<void(bool ok)> fn) {
  if (g_callbacks.depth == 0)
    throw Error("queue_backward_callback: no backward is running (call it from a hook)");
  g_callbacks.fns.push_back(std::move(fn));
}

}  // namespace tg
