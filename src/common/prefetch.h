// Asks for a cache line in the state a write needs, ahead of the write. A launching thread
// writes lines another thread wrote last (a queue slot the consumer read, a ring word it
// cleared): asked for at the end of one launch, the line moves while the program runs on to
// the next launch instead of stalling that launch's write (~100 ns a line on a virtual machine).
#pragma once

namespace proton {

inline void prefetch_for_write(const void* p) {
#if defined(__x86_64__)
  // PREFETCHW: the line comes exclusive, as a store wants it (a no-op on CPUs without it).
  __asm__ volatile("prefetchw %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p, 1, 3);
#endif
}

}  // namespace proton
