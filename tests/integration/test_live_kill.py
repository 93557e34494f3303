# SPDX-License-Identifier: Apache-2.0
"""`ehbt pid` killed with SIGKILL while attached must not leave its target stopped or traced.

SIGKILL cannot be caught, so nothing in ehbt can detach; the promise rests on attaching with
PTRACE_SEIZE + PTRACE_INTERRUPT (no SIGSTOP is ever queued), after which the kernel's
tracer-exit detach lets every thread run on. The test kills ehbt at a spread of delays, so
that across the runs the kill lands before, during and after the attach of a many-thread
target, and checks each time that no thread is traced or stopped and that the target keeps
making progress and finally exits 0.
"""
import os
import pathlib
import signal
import subprocess
import time

PROGRAM = r"""
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static atomic_long ticks;

static void* worker(void* arg) {
  (void)arg;
  struct timespec ts = {0, 1000000};
  for (;;) {
    atomic_fetch_add(&ticks, 1);
    nanosleep(&ts, NULL);
  }
  return NULL;
}

int main(int argc, char** argv) {
  int seconds = argc > 1 ? atoi(argv[1]) : 20;
  for (int i = 0; i < 48; ++i) {
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
  }
  printf("ready\n");
  fflush(stdout);
  for (int s = 0; s < seconds * 10; ++s) {
    usleep(100000);
    printf("%ld\n", atomic_load(&ticks));
    fflush(stdout);
  }
  return 0;
}
"""


def thread_states(pid):
    """(tracer pid, state letter) of every thread of pid."""
    out = []
    for task in pathlib.Path(f"/proc/{pid}/task").iterdir():
        status = (task / "status").read_text()
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        out.append((int(fields["TracerPid"]), fields["State"].strip()[0]))
    return out


def read_tick(proc):
    line = proc.stdout.readline()
    assert line, "target stopped printing"
    return int(line)


def test_sigkill_while_attached_leaves_target_running(ehbt_bin, tmp_path):
    src = tmp_path / "spin.c"
    src.write_text(PROGRAM)
    exe = tmp_path / "spin"
    subprocess.run(["gcc", "-O2", "-pthread", "-o", str(exe), str(src)], check=True)
    target = subprocess.Popen([str(exe), "8"], stdout=subprocess.PIPE, text=True)
    try:
        assert target.stdout.readline().strip() == "ready"
        killed_while_running = 0
        for delay_ms in [0, 1, 2, 3, 5, 8, 12, 20, 30, 50]:
            ehbt = subprocess.Popen([str(ehbt_bin), "pid", str(target.pid), "--all-threads",
                                     "--json"], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            time.sleep(delay_ms / 1000.0)
            if ehbt.poll() is None:
                killed_while_running += 1
            ehbt.send_signal(signal.SIGKILL)
            ehbt.wait()
            # The kernel detaches on tracer exit; give it a moment, then nothing may be traced
            # or stopped ('t' tracing stop, 'T' stopped).
            deadline = time.time() + 2.0
            while True:
                states = thread_states(target.pid)
                bad = [s for s in states if s[0] != 0 or s[1] in "tT"]
                if not bad or time.time() > deadline:
                    break
                time.sleep(0.01)
            assert not bad, f"after SIGKILL at {delay_ms} ms: {len(bad)} threads {bad[:5]}"
            before = read_tick(target)
            after = read_tick(target)
            assert after > before, f"target made no progress after SIGKILL at {delay_ms} ms"
        assert killed_while_running >= 3, "ehbt finished before every kill; nothing was tested"
    except BaseException:
        target.kill()
        raise
    # It finishes its own work and exits 0 (it was never left stopped).
    target.stdout.read()
    assert target.wait(timeout=60) == 0
