//go:build !linux

package etcdproc

import "syscall"

// sysProcAttr puts the child in its own process group, so a Ctrl-C at the
// terminal reaches the parent alone and the parent stops its members in
// order.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
