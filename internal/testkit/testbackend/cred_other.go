//go:build !unix

package testbackend

import "syscall"

// credential is a no-op where there is no root to step down from.
type credential struct{}

func serverCredential() (*credential, error) { return nil, nil }

func (c *credential) own(string) error { return nil }

func (c *credential) sysProcAttr() *syscall.SysProcAttr { return nil }
