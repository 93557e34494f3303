// SPDX-License-Identifier: Apache-2.0
/* Four threads block in four different system calls (read on a pipe, nanosleep, a futex via
 * pthread_cond_wait, poll) while the main thread aborts. Each thread announces it is about to
 * block; main waits for all four, then gives them a moment to enter the kernel. */
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "fixture.h"

static int fx_pipe[2];
static pthread_mutex_t fx_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fx_cv = PTHREAD_COND_INITIALIZER;
static volatile int fx_ready;

static void fx_announce(void) {
  __atomic_add_fetch(&fx_ready, 1, __ATOMIC_SEQ_CST);
}

FX_NOINLINE void* fx_thread_read(void* arg) {
  char c;
  fx_announce();
  ssize_t n = read(fx_pipe[0], &c, 1);
  FX_KEEP();
  return (void*)(long)n + (long)arg;
}

FX_NOINLINE void* fx_thread_sleep(void* arg) {
  struct timespec ts = {3600, 0};
  fx_announce();
  nanosleep(&ts, 0);
  FX_KEEP();
  return arg;
}

FX_NOINLINE void* fx_thread_condwait(void* arg) {
  pthread_mutex_lock(&fx_mu);
  fx_announce();
  pthread_cond_wait(&fx_cv, &fx_mu); /* nobody signals it */
  pthread_mutex_unlock(&fx_mu);
  FX_KEEP();
  return arg;
}

FX_NOINLINE void* fx_thread_poll(void* arg) {
  struct pollfd p = {fx_pipe[0], POLLPRI, 0};
  fx_announce();
  poll(&p, 1, -1);
  FX_KEEP();
  return arg;
}

FX_NOINLINE void fx_main_abort(int n) {
  if (n == 4) abort();
  FX_KEEP();
}

int main(void) {
  pthread_t t[4];
  void* (*fns[4])(void*) = {fx_thread_read, fx_thread_sleep, fx_thread_condwait, fx_thread_poll};
  if (pipe(fx_pipe) != 0) return 1;
  for (int i = 0; i < 4; ++i) pthread_create(&t[i], 0, fns[i], 0);
  while (__atomic_load_n(&fx_ready, __ATOMIC_SEQ_CST) < 4) usleep(1000);
  /* The announcement comes just before each blocking call; this lets them all get there. */
  usleep(200 * 1000);
  /* The condition-variable thread holds the mutex until it waits: taking it proves it waits. */
  pthread_mutex_lock(&fx_mu);
  pthread_mutex_unlock(&fx_mu);
  fx_main_abort(fx_ready);
  return 0;
}
