// SPDX-License-Identifier: Apache-2.0
// Benchmark target for `ehbt pid`: 64 threads parked 30 calls deep, plus a heartbeat thread
// that wakes every 100 us and records the largest gap between two wake-ups (a stop by a
// debugger shows up as a gap). The main thread serves stdin, one command a line:
//   reset   forget the largest gap so far     gap   print it, in microseconds
// It prints "ready <pid>" once every thread is parked. Built by bench/live_stop_window.py.
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { kThreads = 64, kDepth = 30 };

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
static atomic_int parked;
static atomic_long max_gap_ns;
static volatile int released;  // never set: the parked threads wait for good

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

// Recursion the compiler cannot turn into a loop or a tail call: each level has a frame.
__attribute__((noinline)) static int descend(int depth) {
  volatile int keep = depth;
  if (depth == 0) {
    atomic_fetch_add(&parked, 1);
    pthread_mutex_lock(&mu);
    while (!released) pthread_cond_wait(&never, &mu);
    pthread_mutex_unlock(&mu);
    return 0;
  }
  int r = descend(depth - 1);
  return r + keep;
}

static void* parked_thread(void* arg) {
  (void)arg;
  descend(kDepth - 1);
  return NULL;
}

static void* heartbeat(void* arg) {
  (void)arg;
  uint64_t last = now_ns();
  const struct timespec tick = {0, 100000};
  for (;;) {
    nanosleep(&tick, NULL);
    uint64_t t = now_ns();
    long gap = (long)(t - last);
    if (gap > atomic_load(&max_gap_ns)) atomic_store(&max_gap_ns, gap);
    last = t;
  }
  return NULL;
}

int main(void) {
  pthread_t t;
  for (int i = 0; i < kThreads; ++i) pthread_create(&t, NULL, parked_thread, NULL);
  while (atomic_load(&parked) < kThreads) usleep(1000);
  pthread_create(&t, NULL, heartbeat, NULL);
  usleep(20000);
  printf("ready %d\n", (int)getpid());
  fflush(stdout);
  char line[64];
  while (fgets(line, sizeof line, stdin) != NULL) {
    if (strncmp(line, "reset", 5) == 0) {
      atomic_store(&max_gap_ns, 0);
      printf("ok\n");
    } else if (strncmp(line, "gap", 3) == 0) {
      printf("%ld\n", atomic_load(&max_gap_ns) / 1000);
    }
    fflush(stdout);
  }
  return 0;
}
