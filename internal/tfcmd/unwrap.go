package tfcmd

import "strings"

// Unwrapped is err's text with the engine's line wrapping undone: an
// engine wraps a diagnostic to the terminal width, so where a phrase the
// runner matches breaks depends on what comes before it (OpenTofu 1.12
// printed "giving up after 2\nattempt(s)" after a loopback URL). Every
// run of white space, line breaks included, becomes one space.
func Unwrapped(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }
