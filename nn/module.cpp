// nn/module.cpp — Module registries, traversal, state dicts, summary and hooks (see module.hpp).
#include "nn/module.hpp"

#include "autograd/tape.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <unordered_set>

namespace tg::nn {

// ---- StateDict ----------------------------------------------------------------------------------

void StateDict::insert(const std::string& key, const Tensor& value) {
  auto it = index_.find(key);
  if (it != index_.end()) {
    items_[it->second].second = value;
    return;
  }
  index_[key] = items_.size();
  items_.emplace_back(key, value);
}
const Tensor& StateDict::at(const std::string& key) const {
  auto it = index_.find(key);
  if (it == index_.end()) throw Error(fmt::format("StateDict: no key \"{}\"", key));
  return items_[it->second].second;
}
Tensor& StateDict::at(const std::string& key) {
  return const_cast<Tensor&>(static_cast<const StateDict&>(*this).at(key));
}
void StateDict::erase(const std::string& key) {
  auto it = index_.find(key);
  if (it == index_.end()) throw Error(fmt::format("StateDict: no key \"{}\"", key));
  items_.erase(items_.begin() + static_cast<std::ptrdiff_t>(it->second));
  index_.clear();
  for (size_t i = 0; i < items_.size(); ++i) index_[items_[i].first] = i;
}
std::vector<std::string> StateDict::keys() const {
  std::vector<std::string> k;
  for (const auto& [name, t] : items_) k.push_back(name);
  return k;
}

// ---- registration -------------------------------------------------------------------------------

Module::Module(std::string type_name) : type_name_(std::move(type_name)) {}

std::string Module::repr() const { return fmt::format("{}({})", type_name_, extra_repr()); }

void Module::check_new_name(const std::string& name, const char* what) const {
  if (name.empty() || name.find('.') != std::string::npos)
    throw Error(fmt::format("{}.{}: name \"{}\" must be non-empty and contain no '.'", type_name_,
                            what, name));
  auto taken = [&](const auto& v) {
    return std::any_of(v.begin(), v.end(), [&](const auto& p) { return p.first == name; });
  };
  if (taken(params_) || taken(buffers_) || taken(children_))
    throw Error(fmt::format("{}.{}: name \"{}\" is already registered", type_name_, what, name));
}

void Module::check_parameter(const std::string& name, const Tensor& t, const char* what) const {
  if (!is_floating(t.dtype()) || !t.is_leaf())
    throw Error(fmt::format("{}.{}: \"{}\" must be a floating leaf tensor, got {} {}", type_name_,
                            what, name, dtype_name(t.dtype()), t.is_leaf() ? "leaf" : "non-leaf"));
}

Tensor Module::register_parameter(const std::string& name, Tensor t) {
  owned_.push_back(t);
  try {
    register_parameter(name, &owned_.back());
  } catch (...) {
    owned_.pop_back();
    throw;
  }
  return owned_.back();
}

void Module::register_parameter(const std::string& name, Tensor* slot) {
  check_new_name(name, "register_parameter");
  if (!slot || !slot->defined())
    throw Error(fmt::format("{}.register_parameter: \"{}\" is undefined", type_name_, name));
  check_parameter(name, *slot, "register_parameter");
  slot->requires_grad_(true);
  params_.emplace_back(name, slot);
}

std::vector<std::pair<std::string, Tensor>> Module::own_parameters() const {
  std::vector<std::pair<std::string, Tensor>> out;
  for (const auto& [name, slot] : params_) {
    if (!slot->defined()) continue;
    // A member assigned after registration (weight tying) must still be a parameter.
    check_parameter(name, *slot, "parameters");
    out.emplace_back(name, *slot);
  }
  return out;
}

Tensor Module::register_buffer(const std::string& name, Tensor t, bool persistent) {
  check_new_name(name, "register_buffer");
  if (!t.defined())
    throw Error(fmt::format("{}.register_buffer: \"{}\" is undefined", type_name_, name));
  buffers_.push_back({name, Buffer{t, persistent}});
  return t;
}

void Module::add_child(const std::string& name, ModulePtr m) {
  check_new_name(name, "register_module");
  if (!m) throw Error(fmt::format("{}.register_module: \"{}\" is null", type_name_, name));
  if (m.get() == this)
    throw Error(fmt::format("{}.register_module: \"{}\" is the module itself", type_name_, name));
  children_.emplace_back(name, std::move(m));
}

void Module::replace_child(const std::string& name, ModulePtr m) {
  if (!m) throw Error(fmt::format("{}: \"{}\" is null", type_name_, name));
  for (auto& [n, c] : children_)
    if (n == name) {
      c = std::move(m);
      return;
    }
  add_child(name, std::move(m));
}

void Module::remove_child(const std::string& name) {
  for (auto it = children_.begin(); it != children_.end(); ++it)
    if (it->first == name) {
      children_.erase(it);
      return;
    }
}

// ---- traversal
// ------------------------------------------------------------------------------------

namespace {
std::string join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}
}  // namespace

// Calls f(prefix, module) for this module and every descendant, depth first, each module once.
template <typename F>
void Module::walk(const std::string& prefix, F&& f) const {
  std::unordered_set<const Module*> seen;
  std::vector<std::pair<std::string, const Module*>> stack{{prefix, this}};
  while (!stack.empty()) {
    auto [p, m] = stack.back();
    stack.pop_back();
    if (!seen.insert(m).second) continue;
    f(p, *m);
    for (auto it = m->children_.rbegin(); it != m->children_.rend(); ++it)
      stack.emplace_back(join(p, it->first), it->second.get());
  }
}

std::vector<std::pair<std::string, Tensor>> Module::named_parameters(bool recurse) const {
  std::vector<std::pair<std::string, Tensor>> out;
  std::unordered_set<const TensorImpl*> seen;
  auto add = [&](const std::string& prefix, const Module& m) {
    for (const auto& [name, t] : m.own_parameters())
      if (seen.insert(t.impl()).second) out.emplace_back(join(prefix, name), t);
  };
  if (recurse)
    walk("", add);
  else
    add("", *this);
  return out;
}
std::vector<Tensor> Module::parameters(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [n, t] : named_parameters(recurse)) out.push_back(t);
  return out;
}
std::vector<std::pair<std::string, Tensor>> Module::named_buffers(bool recurse) const {
  std::vector<std::pair<std::string, Tensor>> out;
  std::unordered_set<const TensorImpl*> seen;
  auto add = [&](const std::string& prefix, const Module& m) {
    for (const auto& [name, b] : m.buffers_)
      if (seen.insert(b.t.impl()).second) out.emplace_back(join(prefix, name), b.t);
  };
  if (recurse)
    walk("", add);
  else
    add("", *this);
  return out;
}
std::vector<Tensor> Module::buffers(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [n, t] : named_buffers(recurse)) out.push_back(t);
  return out;
}
std::vector<std::pair<std::string, ModulePtr>> Module::named_children() const { return children_; }
std::vector<ModulePtr> Module::children() const {
  std::vector<ModulePtr> out;
  for (const auto& [n, m] : children_) out.push_back(m);
  return out;
}
std::vector<std::pair<std::string, ModulePtr>> Module::named_modules() {
  std::vector<std::pair<std::string, ModulePtr>> out;
  std::unordered_map<const Module*, ModulePtr> owner;  // each module's owning handle
  for (const auto& [n, c] : children_) owner.emplace(c.get(), c);
  walk("", [&](const std::string& prefix, const Module& m) {
    for (const auto& [n, c] : m.children_) owner.emplace(c.get(), c);
    if (&m == this)
      out.emplace_back("", ModulePtr(ModulePtr(), this));  // non-owning (aliasing) handle
    else
      out.emplace_back(prefix, owner.at(&m));
  });
  return out;
}

ModulePtr Module::get_submodule(const std::string& path) {
  ModulePtr cur(ModulePtr(), this);  // non-owning (aliasing) handle, as named_modules gives
  std::string walked;
  size_t start = 0;
  while (!path.empty() && start <= path.size()) {
    const size_t dot = std::min(path.find('.', start), path.size());
    const std::string name = path.substr(start, dot - start);
    ModulePtr next;
    for (const auto& [n, c] : cur->children_)
      if (n == name) next = c;
    if (!next)
      throw Error(fmt::format("{}.get_submodule(\"{}\"): {} has no submodule \"{}\"", type_name_,
                              path, walked.empty() ? type_name_ : walked, name));
    walked = join(walked, name);
    cur = next;
    start = dot + 1;
  }
  return cur;
}

void Module::set_submodule(const std::string& path, ModulePtr m) {
  if (path.empty())
    throw Error(fmt::format("{}.set_submodule: the path must name a descendant", type_name_));
  if (!m) throw Error(fmt::format("{}.set_submodule(\"{}\"): module is null", type_name_, path));
  const size_t dot = path.rfind('.');
  const std::string name = dot == std::string::npos ? path : path.substr(dot + 1);
  get_submodule(path);  // throws naming the missing component
  ModulePtr parent = get_submodule(dot == std::string::npos ? "" : path.substr(0, dot));
  parent->replace_child(name, std::move(m));
}

// ---- modes
// ----------------------------------------------------------------------------------------

Module& Module::train(bool on) {
  training_ = on;
  for (auto& [n, c] : children_) c->train(on);
  return *this;
}
void Module::zero_grad(bool set_to_none) {
  for (Tensor& p : parameters()) set_to_none ? p.reset_grad() : p.zero_grad();
}
int64_t Module::num_parameters(bool only_trainable) const {
  int64_t n = 0;
  for (const auto& [name, p] : named_parameters())
    if (!only_trainable || p.requires_grad()) n += p.numel();
  return n;
}

Module& Module::to(DType dtype) {
  if (!is_floating(dtype))
    throw Error(
        fmt::format("{}.to: dtype must be floating, got {}", type_name_, dtype_name(dtype)));
  NoGradGuard ng;
  auto convert = [dtype](const Tensor& t) {
    if (!is_floating(t.dtype()) || t.dtype() == dtype) return;
    Tensor c = t.detach().to(dtype);
    TensorImpl* impl =
        t.impl();  // swap the storage under the same handle (PyTorch's param.data = ...)
    impl->storage = c.impl()->storage;
    impl->offset = c.impl()->offset;
    impl->strides.clear();
    impl->dtype = dtype;
    impl->grad.reset();
  };
  for (const Tensor& p : parameters()) convert(p);
  for (const Tensor& b : buffers()) convert(b);
  return *this;
}

Module& Module::to(Device device) {
  NoGradGuard ng;
  auto move = [device](const Tensor& t) {
    if (t.device() == device) return;
    Tensor c = t.detach().to(device);
    TensorImpl* impl = t.impl();
    impl->storage = c.impl()->storage;
    impl->offset = c.impl()->offset;
    impl->strides.clear();
    impl->grad.reset();
  };
  for (const Tensor& p : parameters()) move(p);
  for (const Tensor& b : buffers()) move(b);
  return *this;
}

// ---- state dicts
// ----------------------------------------------------------------------------------

void Module::collect_state(const std::string& prefix, StateDict& out) const {
  for (const auto& [name, t] : own_parameters()) out.insert(join(prefix, name), t.detach());
  for (const auto& [name, b] : buffers_)
    if (b.persistent) out.insert(join(prefix, name), b.t.detach());
  for (const auto& [name, c] : children_) c->collect_state(join(prefix, name), out);
}
StateDict Module::state_dict() const {
  StateDict out;
  collect_state("", out);
  return out;
}

LoadResult Module::load_state_dict(const StateDict& dict, bool strict) {
  StateDict own = state_dict();
  LoadResult res;
  std::vector<std::string> problems;
  for (const auto& [key, t] : own) {
    if (!dict.contains(key)) {
      res.missing_keys.push_back(key);
      continue;
    }
    const Tensor& src = dict.at(key);
    if (!src.defined())
      problems.push_back(fmt::format("undefined tensor for {}", key));
    else if (src.shape() != t.shape())
      problems.push_back(fmt::format("shape mismatch for {}: checkpoint {}, model {}", key,
                                     shape_str(src.shape()), shape_str(t.shape())));
    else if (src.dtype() != t.dtype())
      problems.push_back(fmt::format("dtype mismatch for {}: checkpoint {}, model {}", key,
                                     dtype_name(src.dtype()), dtype_name(t.dtype())));
  }
  for (const auto& [key, t] : dict)
    if (!own.contains(key)) res.unexpected_keys.push_back(key);
  if (strict && !res.unexpected_keys.empty())
    problems.insert(problems.begin(),
                    fmt::format("unexpected keys: {}", fmt::join(res.unexpected_keys, ", ")));
  if (strict && !res.missing_keys.empty())
    problems.insert(problems.begin(),
                    fmt::format("missing keys: {}", fmt::join(res.missing_keys, ", ")));
  if (!problems.empty())
    throw Error(fmt::format("{}.load_state_dict: {} error(s):\n  {}", type_name_, problems.size(),
                            fmt::join(problems, "\n  ")));
  for (const auto& [key, t] : own) {
    if (!dict.contains(key)) continue;
    const Tensor src = tg::detail::dense(dict.at(key));
    if (src.data_ptr() == t.data_ptr() && t.is_contiguous()) continue;
    if (!t.is_contiguous()) {  // a strided view (a transposed parameter): written through it
      NoGradGuard ng;
      t.detach().copy_(src);
    } else if (src.device().type == DeviceType::CPU && t.device().type == DeviceType::CPU) {
      std::memmove(t.data_ptr(), src.data_ptr(),
                   static_cast<size_t>(t.numel()) * dtype_size(t.dtype()));
    } else {  // across devices: the copy takes the place of the old storage (same handle)
      Tensor c = src.detach().to(t.device()).clone();
      t.impl()->storage = c.impl()->storage;
      t.impl()->offset = c.impl()->offset;
      t.impl()->strides.clear();
    }
    note_inplace_write(t, "load_state_dict");
  }
  return res;
}

// ---- summary
// --------------------------------------------------------------------------------------

void Module::summary_lines(const std::string& name, int depth, std::string& out) const {
  std::string pad(static_cast<size_t>(2 * depth), ' ');
  int64_t n = 0;
  for (const auto& [pn, p] : named_parameters()) n += p.numel();
  out +=
      fmt::format("{}{}{}: {} parameters\n", pad, name.empty() ? "" : "(" + name + ") ", repr(), n);
  for (const auto& [pn, p] : own_parameters())
    out += fmt::format("{}  {} {} {}\n", pad, pn, shape_str(p.shape()), dtype_name(p.dtype()));
  for (const auto& [bn, b] : buffers_)
    out += fmt::format("{}  {} {} {} (buffer)\n", pad, bn, shape_str(b.t.shape()),
                       dtype_name(b.t.dtype()));
  for (const auto& [cn, c] : children_) c->summary_lines(cn, depth + 1, out);
}
std::string Module::summary() const {
  std::string out;
  summary_lines("", 0, out);
  out +=
      fmt::format("Total parameters: {} (trainable {})\n", num_parameters(), num_parameters(true));
  return out;
}

// ---- hooks
// ----------------------------------------------------------------------------------------

int Module::register_forward_hook(ForwardHook fn) {
  if (!fn) throw Error(fmt::format("{}.register_forward_hook: empty function", type_name_));
  hooks_.emplace_back(next_hook_id_, [fn = std::move(fn)](Module& m, const std::vector<Tensor>& in,
                                                          const Tensor& out) {
    fn(m, in, out);
    return out;
  });
  return next_hook_id_++;
}
int Module::register_forward_output_hook(ForwardOutputHook fn) {
  if (!fn) throw Error(fmt::format("{}.register_forward_output_hook: empty function", type_name_));
  hooks_.emplace_back(next_hook_id_, std::move(fn));
  return next_hook_id_++;
}
void Module::remove_forward_hook(int id) {
  auto it =
      std::find_if(hooks_.begin(), hooks_.end(), [id](const auto& h) { return h.first == id; });
  if (it == hooks_.end())
    throw Error(fmt::format("{}.remove_forward_hook: no hook with id {}", type_name_, id));
  hooks_.erase(it);
}
Tensor Module::run_hooks(const std::vector<Tensor>& inputs, const Tensor& out) {
  auto hooks = hooks_;  // a hook may remove itself
  Tensor result = out;
  for (auto& [id, fn] : hooks) result = fn(*this, inputs, result);
  return result;
}

}  // namespace tg::nn
