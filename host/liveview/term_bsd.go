//go:build darwin || freebsd || netbsd || openbsd

package liveview

import "golang.org/x/sys/unix"

const ioctlGetTermios = unix.TIOCGETA
