// nn/module.hpp — tg::nn::Module, the base of every layer: named parameters, buffers and
// submodules with PyTorch's dotted names, train/eval, state dicts, a printable summary and
// forward hooks. TensorModule is a Module whose forward maps one Tensor to one Tensor.
//
// Ownership model:
//  - Modules are used through std::shared_ptr (`auto lin = std::make_shared<nn::Linear>(4, 3)`).
//    A parent owns its children through shared_ptr; a child never points to its parent, so a
//    module tree has no cycles. The same child may be registered in two parents (sharing).
//    Modules are neither copyable nor movable: registries hold handles into their own members.
//  - A parameter is a Tensor handle (a leaf that requires grad). A layer keeps it as a public
//    member (`lin->weight`) registered with register_parameter(name, &member): the registry reads
//    the member itself, so assigning it re-registers the new tensor, as PyTorch's setattr does —
//    `wte->weight = lm_head->weight` ties the two (parameters() then yields the shared tensor,
//    the old one is gone). A member may be assigned a leaf tensor or an undefined one (the
//    parameter is then left out, like PyTorch's None); traversing a module whose member holds a
//    non-leaf throws, naming it. register_parameter(name, t) (by value) registers a tensor the
//    module holds itself (no member to assign).
//  - named_parameters() lists a tensor shared by two modules (tied weights) once, under its first
//    name, like PyTorch (dedup by identity); state_dict() lists every name.
//  - state_dict() returns detached handles that share storage with the module (PyTorch's
//    behaviour): clone the values for a snapshot.
//
// Forward hooks: a module whose forward maps Tensors to a Tensor ends its forward with
// `return hooked({inputs...}, output);` (the base helper). It runs every hook registered with
// register_forward_hook(fn(module, inputs, output)) in registration order, and costs nothing
// when no hook is registered. Hooks observe; they do not replace the output — except those
// registered with register_forward_output_hook(fn(module, inputs, output) -> Tensor), whose return
// value is the output every later hook and the caller see (PyTorch's hook that returns a value;
// nn/lora.cpp adds the LoRA branch to a wrapped Linear's output this way).
//
// get_submodule(path) / set_submodule(path, m) (PyTorch's names) find and replace a descendant by
// its dotted path in the registry (traversal, state dicts, train/eval). A layer that also keeps
// the child in a typed member of its own (LlamaAttention::q_proj) still calls the old module
// from its forward: set_submodule changes the registry only.
// Deliberately not here: the layers themselves (nn/layers.hpp), device moves.
#pragma once

#include "autograd/tensor.hpp"

#include <deque>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tg::nn {

// An insertion-ordered name -> Tensor map (state dicts).
class StateDict {
 public:
  using Item = std::pair<std::string, Tensor>;
  void insert(const std::string& key, const Tensor& value);  // replaces an existing key in place
  bool contains(const std::string& key) const { return index_.count(key) != 0; }
  const Tensor& at(const std::string& key) const;  // throws naming the key
  Tensor& at(const std::string& key);
  void erase(const std::string& key);
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  std::vector<std::string> keys() const;
  std::vector<Item>::const_iterator begin() const { return items_.begin(); }
  std::vector<Item>::const_iterator end() const { return items_.end(); }

 private:
  std::vector<Item> items_;
  std::unordered_map<std::string, size_t> index_;
};

// What load_state_dict(strict = false) skipped (PyTorch's _IncompatibleKeys).
struct LoadResult {
  std::vector<std::string> missing_keys;
  std::vector<std::string> unexpected_keys;
};

class Module;
using ModulePtr = std::shared_ptr<Module>;
using ForwardHook =
    std::function<void(Module& module, const std::vector<Tensor>& inputs, const Tensor& output)>;
// A forward hook whose return value replaces the output.
using ForwardOutputHook =
    std::function<Tensor(Module& module, const std::vector<Tensor>& inputs, const Tensor& output)>;

class Module {
 public:
  explicit Module(std::string type_name);
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  const std::string& type_name() const { return type_name_; }
  // The constructor arguments as PyTorch prints them ("in_features=4, out_features=3, bias=True").
  virtual std::string extra_repr() const { return ""; }
  std::string repr() const;  // "Linear(in_features=4, out_features=3, bias=True)"

  // ---- registration: names are non-empty, without '.', unique within the module ----
  // Makes t a leaf that requires grad and returns the registered handle (t itself).
  Tensor register_parameter(const std::string& name, Tensor t);
  // Registers the member *slot (a field of this module, which must outlive nothing but the
  // module): the registry reads it on every traversal, so assigning the member re-registers.
  void register_parameter(const std::string& name, Tensor* slot);
  // Buffers are state that is not trained (running stats, positional tables). Non-persistent
  // buffers are left out of state_dict().
  Tensor register_buffer(const std::string& name, Tensor t, bool persistent = true);
  template <typename M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> m) {
    add_child(name, m);
    return m;
  }

  // ---- traversal (dotted names: "layers.0.weight") ----
  std::vector<std::pair<std::string, Tensor>> named_parameters(bool recurse = true) const;
  std::vector<Tensor> parameters(bool recurse = true) const;
  std::vector<std::pair<std::string, Tensor>> named_buffers(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  std::vector<std::pair<std::string, ModulePtr>> named_children() const;
  std::vector<ModulePtr> children() const;
  // Every submodule, this one first under the name "" (held by a non-owning shared_ptr), each
  // module once.
  std::vector<std::pair<std::string, ModulePtr>> named_modules();
  // The descendant at a dotted path ("layers.0.self_attn"; "" is this module, held by a
  // non-owning handle); throws naming the first missing component.
  ModulePtr get_submodule(const std::string& path);
  // Replaces the existing descendant at a non-empty dotted path in its parent's registry (its
  // position kept); throws naming the path when it does not exist.
  void set_submodule(const std::string& path, ModulePtr m);

  // ---- modes and gradients ----
  Module& train(bool on = true);  // recursive, like PyTorch
  Module& eval() { return train(false); }
  bool is_training() const { return training_; }
  void zero_grad(bool set_to_none = true);
  int64_t num_parameters(bool only_trainable = false) const;
  // Converts every floating parameter and buffer in place (the handles stay the same, like
  // PyTorch's module.to(dtype)); gradients are dropped.
  Module& to(DType dtype);
  // Moves every parameter and buffer to `device` (in place: handles held elsewhere, such as an
  // optimizer's, see the move); gradients are dropped. Create optimizers after moving.
  Module& to(Device device);

  // ---- state ----
  StateDict state_dict() const;  // parameters and persistent buffers, in registration order
  // Checks everything first (missing and unexpected keys when strict, shape and dtype of every
  // shared key) and throws one tg::Error listing all problems; then copies values in place.
  LoadResult load_state_dict(const StateDict& dict, bool strict = true);

  // The module tree, one line per module with its parameter count, and each own parameter's
  // shape below it; ends with the total.
  std::string summary() const;

  // ---- hooks ----
  int register_forward_hook(ForwardHook fn);  // returns an id for remove_forward_hook
  // Runs in the same order as the observing hooks; its result is the output from then on.
  int register_forward_output_hook(ForwardOutputHook fn);
  void remove_forward_hook(int id);

 protected:
  // Layers end their forward with `return hooked({x}, out);`.
  Tensor hooked(std::initializer_list<Tensor> inputs, const Tensor& out) {
    if (hooks_.empty()) return out;
    return run_hooks(std::vector<Tensor>(inputs), out);
  }
  void add_child(const std::string& name, ModulePtr m);
  // Replaces the child registered as `name` in place (its position kept; ModuleDict's update).
  void replace_child(const std::string& name, ModulePtr m);
  void remove_child(const std::string& name);
  const std::vector<std::pair<std::string, ModulePtr>>& children_ref() const { return children_; }

 private:
  struct Buffer {
    Tensor t;
    bool persistent = true;
  };
  std::string type_name_;
  bool training_ = true;
  // Each parameter's slot: a member of the layer, or an entry of owned_ (stable addresses).
  std::vector<std::pair<std::string, Tensor*>> params_;
  std::deque<Tensor> owned_;
  std::vector<std::pair<std::string, Buffer>> buffers_;
  std::vector<std::pair<std::string, ModulePtr>> children_;
  std::vector<std::pair<int, ForwardOutputHook>> hooks_;
  int next_hook_id_ = 0;

  void check_new_name(const std::string& name, const char* what) const;
  void check_parameter(const std::string& name, const Tensor& t, const char* what) const;
  // The registered parameters that hold a tensor (an assigned-away slot is skipped), checked.
  std::vector<std::pair<std::string, Tensor>> own_parameters() const;
  Tensor run_hooks(const std::vector<Tensor>& inputs, const Tensor& out);
  void collect_state(const std::string& prefix, StateDict& out) const;
  void summary_lines(const std::string& name, int depth, std::string& out) const;
  template <typename F>
  void walk(const std::string& prefix, F&& f) const;
};

// A module whose forward maps one Tensor to one Tensor (what Sequential chains).
class TensorModule : public Module {
 public:
  using Module::Module;
  virtual Tensor forward(const Tensor& x) = 0;
  // module(x) records the caller's line as the site of every op the forward records (calling
  // forward(x) directly names the module's own source lines).
  Tensor operator()(const Tensor& x, Site site = Site::here()) {
    SiteScope scope(site);
    return forward(x);
  }
};

}  // namespace tg::nn
