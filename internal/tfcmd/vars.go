package tfcmd

import (
	"maps"
	"slices"
	"strconv"
)

// Vars are the variables a command is given on its command line.
type Vars struct {
	// Files are -var-file paths, passed in this order.
	Files []string
	// Values are -var NAME=VALUE pairs, passed by name after the files.
	Values map[string]string
}

// Args puts var files first and -var pairs after them: terraform takes
// the last value it is given, so an explicit value wins over a var file.
func (v Vars) Args() []string {
	var args []string
	for _, f := range v.Files {
		args = append(args, "-var-file="+f)
	}
	for _, k := range slices.Sorted(maps.Keys(v.Values)) {
		args = append(args, "-var", k+"="+v.Values[k])
	}
	return args
}

// Change holds what plan, apply and destroy take alike.
type Change struct {
	// LockTimeout is -lock-timeout's value (always passed: terraform's
	// default waits forever for nobody).
	LockTimeout string
	// Lock and Refresh are -lock and -refresh; nil leaves terraform's default.
	Lock, Refresh *bool
	// Parallelism is -parallelism when above 0.
	Parallelism int
	// Targets are -target addresses, in order.
	Targets []string
	Vars    Vars
}

func (c Change) args() []string {
	args := []string{"-input=false", "-lock-timeout=" + c.LockTimeout}
	if c.Lock != nil {
		args = append(args, "-lock="+strconv.FormatBool(*c.Lock))
	}
	if c.Refresh != nil {
		args = append(args, "-refresh="+strconv.FormatBool(*c.Refresh))
	}
	if c.Parallelism > 0 {
		args = append(args, "-parallelism="+strconv.Itoa(c.Parallelism))
	}
	for _, t := range c.Targets {
		args = append(args, "-target="+t)
	}
	return append(args, c.Vars.Args()...)
}

func replaceArgs(addrs []string) []string {
	var args []string
	for _, r := range addrs {
		args = append(args, "-replace="+r)
	}
	return args
}
