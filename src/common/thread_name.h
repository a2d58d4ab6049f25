// Names the profiler's own threads, so that `top -H`, gdb, py-spy and perf show which of a
// program's threads are ours (and what each does) instead of a copy of the program's name.
#pragma once

#if defined(__linux__)
#include <pthread.h>
#endif

namespace proton {

/// Names the calling thread. Linux keeps 15 characters; longer names are cut there.
inline void name_this_thread(const char* name) {
#if defined(__linux__)
  char cut[16] = {};
  for (int i = 0; i < 15 && name[i] != '\0'; ++i)
    cut[i] = name[i];
  pthread_setname_np(pthread_self(), cut);
#else
  (void)name;
#endif
}

}  // namespace proton
