//go:build !unix

package platform

import "os/exec"

// killGroupOnCancel keeps exec's default where there are no process groups:
// the command itself is killed when the context ends.
func killGroupOnCancel(*exec.Cmd) {}
