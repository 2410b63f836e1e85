package testprovider

import "errors"

// ErrInvalidVersion is returned for a provider version that is not a plain
// semantic version such as "1.2.3" (no "v" prefix).
var ErrInvalidVersion = errors.New("invalid provider version")
