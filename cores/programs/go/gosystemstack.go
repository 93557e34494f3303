// SPDX-License-Identifier: Apache-2.0
// Go fixture: a fatal error raised on the thread's system stack. The second Unlock of a
// sync.Mutex calls sync.fatal -> runtime.fatal -> fatalthrow, which runs its report and
// crash() through runtime.systemstack, on the thread's g0 stack: with GOTRACEBACK=crash the
// process dies of SIGABRT there, so the core's walk must go from g0 back to the goroutine's
// stack through the state systemstack saved (issue #32). A recursive call keeps main's frames
// more than one deep; calls are kept by go:noinline.
package main

import (
	"os"
	"sync"
)

var mu sync.Mutex

//go:noinline
func unlockTwice(n int) {
	if n > 0 {
		unlockTwice(n - 1)
		return
	}
	mu.Lock()
	mu.Unlock()
	mu.Unlock() // fatal error: sync: unlock of unlocked mutex
}

func main() {
	unlockTwice(len(os.Args))
}
