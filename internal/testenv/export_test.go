package testenv

// BuildTofu is buildTofu for tests: it builds into dir, not the shared cache.
var BuildTofu = buildTofu
