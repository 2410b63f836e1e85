//go:build windows

package atomicfile

func syncAll() {}
