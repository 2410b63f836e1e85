package testenv

// BuildTofu is Tofu110's build for tests: it builds into dir, not the
// shared cache.
var BuildTofu = Tofu110.build

// DropNestedBackends is dropNestedBackends for tests.
var DropNestedBackends = dropNestedBackends
