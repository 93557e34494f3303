// SPDX-License-Identifier: Apache-2.0
/* A process whose address space holds mapped files that are data, not ELF objects, as real
 * programs have them: the C.UTF-8 locale (glibc maps /usr/lib/locale/C.utf8/LC_CTYPE),
 * gconv-modules.cache (iconv_open), a data file mapped read-only and then unlinked, POSIX
 * shared memory (shm_open), SysV shared memory (shmget/shmat) and /dev/zero mapped MAP_SHARED.
 * None of them is a module: a backtrace of this core has nothing to warn about. Then
 * main -> fx_datamaps_level1 -> fx_datamaps_level2 writes through a null pointer; with
 * FX_DATAMAPS_WAIT set it says "ready" and waits for a line on stdin there instead, for a
 * look at the live process.
 * The shared memory objects are removed right after mapping (the mappings stay), so a crash
 * leaves nothing behind in /dev/shm or the SysV tables. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <iconv.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <unistd.h>

#include "fixture.h"

#define FX_PAGE 4096

volatile int fx_sink;
/* Kept reachable so no mapping looks unused. */
volatile char* fx_maps[4];

static void fx_fail(const char* what) {
  perror(what);
  _exit(2);
}

/* Maps each kind of data file; exits 2 (no core) if one cannot be made. */
static void fx_map_data(void) {
  if (setlocale(LC_ALL, "C.UTF-8") == NULL) fx_fail("setlocale C.UTF-8");
  iconv_t cd = iconv_open("UTF-16", "UTF-8");
  if (cd == (iconv_t)-1) fx_fail("iconv_open");

  /* A data file, mapped read-only, then deleted: "datamaps.data (deleted)". */
  const char* data = "datamaps.data";
  int fd = open(data, O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) fx_fail("open datamaps.data");
  char page[2 * FX_PAGE];
  memset(page, 'd', sizeof page);
  if (write(fd, page, sizeof page) != (ssize_t)sizeof page) fx_fail("write datamaps.data");
  fx_maps[0] = mmap(NULL, sizeof page, PROT_READ, MAP_PRIVATE, fd, 0);
  if (fx_maps[0] == MAP_FAILED) fx_fail("mmap datamaps.data");
  close(fd);
  if (unlink(data) != 0) fx_fail("unlink datamaps.data");

  /* POSIX shared memory: /dev/shm/ehbt-datamaps-PID. */
  char name[64];
  snprintf(name, sizeof name, "/ehbt-datamaps-%d", (int)getpid());
  fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0) fx_fail("shm_open");
  if (ftruncate(fd, FX_PAGE) != 0) fx_fail("ftruncate shm");
  fx_maps[1] = mmap(NULL, FX_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (fx_maps[1] == MAP_FAILED) fx_fail("mmap shm");
  close(fd);
  shm_unlink(name);
  fx_maps[1][0] = 'p';

  /* SysV shared memory: "/SYSV00000000 (deleted)". */
  int id = shmget(IPC_PRIVATE, FX_PAGE, IPC_CREAT | 0600);
  if (id < 0) fx_fail("shmget");
  fx_maps[2] = shmat(id, NULL, 0);
  if (fx_maps[2] == (void*)-1) fx_fail("shmat");
  shmctl(id, IPC_RMID, NULL); /* destroyed once detached, at exit */
  fx_maps[2][0] = 's';

  /* /dev/zero, shared: "/dev/zero (deleted)". */
  fd = open("/dev/zero", O_RDWR);
  if (fd < 0) fx_fail("open /dev/zero");
  fx_maps[3] = mmap(NULL, FX_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (fx_maps[3] == MAP_FAILED) fx_fail("mmap /dev/zero");
  close(fd);
  fx_maps[3][0] = 'z';
}

FX_NOINLINE void fx_datamaps_level2(int depth) {
  fx_sink = depth + fx_maps[0][0];
  if (getenv("FX_DATAMAPS_WAIT") != NULL) {
    char line[16];
    puts("ready");
    fflush(stdout);
    fx_sink = read(0, line, sizeof line) > 0;
  } else {
    fx_null_write(depth);
  }
  FX_KEEP();
}

FX_NOINLINE void fx_datamaps_level1(int depth) {
  fx_datamaps_level2(depth + 1);
  FX_KEEP();
}

int main(void) {
  fx_map_data();
  fx_datamaps_level1(1);
  return 0;
}
