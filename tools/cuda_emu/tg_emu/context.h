// tools/cuda_emu/tg_emu/context.h — switching between the emulated threads' stacks. On x86-64 a
// ten-instruction switch that saves the callee-saved registers and the SSE/x87 control words
// (System V ABI) on the stack it leaves; elsewhere, under AddressSanitizer (which follows
// swapcontext but not our switch) or with TG_EMU_UCONTEXT defined, makecontext/swapcontext
// (portable, but each switch is a sigprocmask system call: several times slower on kernels full of
// shuffles). Deliberately not handled: ThreadSanitizer, CET shadow stacks.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__x86_64__) && !defined(TG_EMU_UCONTEXT) && !defined(__SANITIZE_ADDRESS__)

// tg_emu_switch(from, to): pushes rbp, rbx, r12-r15 and the control words, stores rsp in *from,
// loads rsp = to and pops the same from there. Weak: every translation unit that includes this
// header assembles a copy; the linker keeps one.
asm(R"(
  .text
  .p2align 4
  .weak tg_emu_switch
  .type tg_emu_switch, @function
tg_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size tg_emu_switch, .-tg_emu_switch
)");
extern "C" void tg_emu_switch(void** from, void* to);

namespace tg_emu {
struct Context {
  void* sp = nullptr;
};
// Prepares c to start entry (which must never return) on [stack, stack + size).
inline void context_init(Context& c, char* stack, size_t size, void (*entry)()) {
  uintptr_t top = (reinterpret_cast<uintptr_t>(stack) + size) & ~uintptr_t(15);
  void** s = reinterpret_cast<void**>(top);
  s[-1] = nullptr;                               // entry's return address (never used)
  s[-2] = reinterpret_cast<void*>(entry);        // where tg_emu_switch's ret goes
  for (int i = 3; i <= 8; ++i) s[-i] = nullptr;  // rbp, rbx, r12-r15
  uint32_t csr[2] = {0, 0};
  asm volatile("stmxcsr %0; fnstcw %1" : "=m"(csr[0]), "=m"(csr[1]));
  s[-9] = nullptr;
  __builtin_memcpy(&s[-9], csr, sizeof csr);  // the caller's rounding and exception masks
  c.sp = &s[-9];
}
inline void context_switch(Context& from, Context& to) { tg_emu_switch(&from.sp, to.sp); }
}  // namespace tg_emu

#else

#include <ucontext.h>

namespace tg_emu {
struct Context {
  ucontext_t uc;
  bool ready = false;
};
inline void context_init(Context& c, char* stack, size_t size, void (*entry)()) {
  if (!c.ready) getcontext(&c.uc), c.ready = true;
  c.uc.uc_stack.ss_sp = stack;
  c.uc.uc_stack.ss_size = size;
  c.uc.uc_link = nullptr;
  makecontext(&c.uc, entry, 0);
}
inline void context_switch(Context& from, Context& to) { swapcontext(&from.uc, &to.uc); }
}  // namespace tg_emu

#endif
