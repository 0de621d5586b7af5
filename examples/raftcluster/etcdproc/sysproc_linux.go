package etcdproc

import "syscall"

// sysProcAttr puts the child in its own process group, so a Ctrl-C at the
// terminal reaches the parent alone and the parent stops its members in
// order, and kills the child if the parent dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
