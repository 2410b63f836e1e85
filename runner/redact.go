package runner

// SensitiveMarker replaces every sensitive value in the redacted
// rendering of a saved plan (PlanSummary.RedactedJSONFile), as terraform's
// own human-readable plan shows it.
const SensitiveMarker = "(sensitive value)"
