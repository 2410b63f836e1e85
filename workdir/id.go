package workdir

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode/utf8"
)

const (
	maxNameLen = 1024 // longest stack or instance name accepted
	maxSlugLen = 48   // readable part kept from each of stack and instance
	hashLen    = 12   // hex digits of the (stack, instance) digest
)

// ID returns the workdir ID of an instance: a single path element that is
// safe on Linux, macOS and Windows, readable, and different for every
// different (stack, instance) pair.
//
// It has the form SLUG(stack) "__" SLUG(instance) "-" HASH, for example
// "plat-ue2-dev__elasticache_redis-cluster-7-ad298ab5d694". SLUG keeps
// ASCII letters, digits, '-' and '_', turns '/' into '_' and everything else
// into '-', and is cut at 48 bytes; HASH is the first 12 hex digits of the
// SHA-256 of the exact pair, so "a/b" and "a-b" never collide. The result
// contains no dot (so no Windows device name like CON or NUL can appear
// before an extension), never ends in a dot or space, and is at most 111
// bytes long.
//
// Stack and instance must be canonical relative slash paths: not empty, not
// absolute, no backslash, no empty, "." or ".." element, no control
// characters. Anything else is an *InputError naming the input.
func ID(stack, instance string) (string, error) {
	if err := validateName("stack", stack); err != nil {
		return "", err
	}
	if err := validateName("instance", instance); err != nil {
		return "", err
	}
	// NUL cannot occur in a valid name, so the pair is encoded injectively.
	sum := sha256.Sum256([]byte(stack + "\x00" + instance))
	return slug(stack) + "__" + slug(instance) + "-" + hex.EncodeToString(sum[:])[:hashLen], nil
}

func validateName(field, s string) error {
	switch {
	case s == "":
		return invalid(field, s, "is empty")
	case len(s) > maxNameLen:
		return invalid(field, s, "is longer than %d bytes", maxNameLen)
	case !utf8.ValidString(s):
		return invalid(field, s, "is not valid UTF-8")
	case strings.ContainsRune(s, '\\'):
		return invalid(field, s, "contains a backslash; separate path elements with /")
	case strings.HasPrefix(s, "/"), len(s) >= 2 && s[1] == ':' && isLetter(s[0]):
		return invalid(field, s, "is an absolute path")
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return invalid(field, s, "contains a control character")
		}
	}
	for _, el := range strings.Split(s, "/") {
		switch el {
		case "":
			return invalid(field, s, "has an empty path element")
		case ".":
			return invalid(field, s, `has a "." path element`)
		case "..":
			return invalid(field, s, `has a ".." path element, which escapes the root`)
		}
	}
	return nil
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func slug(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s) && len(b) < maxSlugLen; i++ {
		c := s[i]
		switch {
		case isLetter(c), c >= '0' && c <= '9', c == '_':
		case c == '/':
			c = '_'
		default:
			c = '-'
		}
		if c == '-' && len(b) > 0 && b[len(b)-1] == '-' {
			continue
		}
		b = append(b, c)
	}
	out := strings.Trim(string(b), "-_")
	if out == "" {
		return "x"
	}
	return out
}
