// Package redact removes the secrets from the engine's JSON rendering of
// a saved plan (terraform show -json, or tofu's), so that the rendering
// can be shared: a PR comment, a CI artifact. It is pure: bytes in,
// bytes out, no files, no engine.
//
// The document is rewritten as generic JSON rather than through
// terraform-json's Plan type: a typed round trip would drop what that
// type does not know (fields of newer terraform or of OpenTofu), and
// terraform-json's sanitize package leaves resource_drift and the
// configuration's constants and defaults alone.
//
// Guarantees:
//
//   - Every value the document itself marks sensitive is replaced by the
//     caller's marker: resource_changes, resource_drift and
//     deferred_changes (before and after, against before_sensitive and
//     after_sensitive), output_changes likewise, planned_values and
//     prior_state (resources' values against sensitive_values, outputs
//     with sensitive = true), the values of variables declared
//     sensitive, and in the configuration the defaults of sensitive
//     variables and the constant arguments a module call gives to them.
//     A mask whose shape does not match its value but marks something
//     replaces the whole value.
//   - Copies go too: the engine does not mark a value a provider
//     computed from a sensitive one (terraform_data's output copies its
//     input unmarked), so every string the first pass removed, of 4
//     characters or more, is removed wherever else it shows as a value,
//     and so is every string that contains one of 8 characters or more.
//     Shorter secrets are replaced only where they are marked: matching
//     them everywhere would rewrite unrelated values.
//   - The redacted document is the same plan: outside values, identity
//     fields (addresses, types, names, actions, versions) are never
//     rewritten,
//     so it has the raw one's resources, actions and output changes, and
//     terraform-json reads it. Fields redact does not know are kept.
//   - A null stays null (it hides nothing, and tells unknown from set);
//     numbers come out exactly as the engine wrote them, and "<", ">"
//     and "&" are not escaped.
package redact
