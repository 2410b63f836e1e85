package testregistry

import "errors"

// ErrBadPackage is returned by Add for a package it cannot serve.
var ErrBadPackage = errors.New("testregistry: bad package")
