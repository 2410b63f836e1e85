package engine

// Test-only access to unexported parts.
var (
	ParseVersionOutput = parseVersionOutput
	RunVersion         = runVersion
)
