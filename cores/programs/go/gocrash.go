// SPDX-License-Identifier: Apache-2.0
// Go fixture: a nil pointer dereference four calls deep, run with GOTRACEBACK=crash so that
// the runtime prints every goroutine's frames and then dies of SIGABRT (a core). The faulting
// function is a leaf that sets up no frame (no frame pointer of its own), the kind the
// frame-pointer walk skips over; the others have frames. Calls are kept by go:noinline.
package main

import "os"

type node struct {
	next *node
	val  int
}

//go:noinline
func fxGoLeaf(n *node) int { return n.next.val }

//go:noinline
func fxGoMiddle(n *node, d int) int {
	var pad [4]int
	pad[d&3] = d
	return fxGoLeaf(n) + pad[1]
}

//go:noinline
func fxGoOuter(n *node) int { return fxGoMiddle(n, 3) * 2 }

func main() {
	os.Exit(fxGoOuter(&node{}))
}
