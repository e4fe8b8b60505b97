package server

import "syscall"

var errTooManyFiles = syscall.EMFILE
