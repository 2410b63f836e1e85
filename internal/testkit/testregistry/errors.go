package testregistry

import "errors"

// ErrBadPackage is returned by Add for a package it cannot serve.
var ErrBadPackage = errors.New("testregistry: bad package")

// ErrBadModule is returned by AddModule for a module version it cannot
// serve.
var ErrBadModule = errors.New("testregistry: bad module")
