// SPDX-License-Identifier: Apache-2.0
// Go fixture: every goroutine asleep. main blocks receiving from a channel nobody sends on:
// chanrecv -> gopark -> runtime.mcall(park_m), which switches to the thread's g0 stack,
// detaches the goroutine (dropg) and schedules; with nothing left to run the runtime's
// checkdead reports "all goroutines are asleep - deadlock!" (Go 1.19: from sysmon, on its own
// thread's g0 stack) and, with GOTRACEBACK=crash, dies of SIGABRT. The thread that parked main
// is left in mcall: its walk must end there without reading stale words of g0's stack.
package main

func main() {
	ch := make(chan int)
	<-ch
}
