// Package earlyeval is early evaluation as the runner sees it: OpenTofu
// 1.8 and Terraform 1.15 evaluate a backend block and a module call's
// source and version from input variables and locals at init, so init,
// get (and, by engine, workspace select, validate and show) are given
// the unit's variables, and what init depends on includes the values
// those expressions read. It parses configuration and variable files;
// it never runs an engine and never writes.
//
// Guarantees:
//
//   - RulesOf is the one place that decides, from an engine's kind and
//     version, which commands besides plan, apply and destroy are given
//     the variables: OpenTofu >= 1.8 init, get, workspace select,
//     validate and show; Terraform >= 1.15 the same but workspace select
//     (Terraform refuses -var there); older engines, and an engine of
//     unknown version, none. A prerelease counts as its release.
//   - The values a unit gives its variables follow the engine's
//     precedence, lowest first: TF_VAR_NAME, terraform.tfvars,
//     terraform.tfvars.json, *.auto.tfvars[.json] in name order (the
//     generated ones of an overlay included), Given.VarFiles in order,
//     Given.Vars. Variable files are read as regular files only
//     (modtree.ReadRegular); a file that is missing or does not parse
//     gives no values (the engine reports it).
//   - BackendDigest and ModuleDigest hash what the backend's, or a
//     module call's, expressions read: every variable they reach through
//     locals (followed transitively) with its declaration, its default
//     and the unit's value as text, and each local's text on the way.
//     They are "" when the expressions are literal. The expressions are
//     not evaluated: one value written two ways (a number in a var file,
//     the same digits as a -var) may digest differently, so a record
//     keyed by a digest may see a change where there is none, never
//     miss one.
//   - RulesOf also decides how a module source evaluates (Rules.Eval):
//     Terraform's rule (EvalConst) takes literals and const variables
//     only, any other variable being unknown at init; OpenTofu's
//     (EvalStatic) every variable but a sensitive or ephemeral one.
//     Functions is the one table of the functions each rule has: the
//     pure ones both engines have at init that compute here what they
//     compute there, and file of a file inside the directory the engine
//     runs in; never an impure one (timestamp, uuid, bcrypt), another
//     filesystem one (fileset, templatefile, ...), file of a path outside
//     that directory, try or can.
//   - ModuleSources evaluates only the root module's module sources that
//     are expressions (modtree.DynamicExpr), by the engine's rule: from
//     the variables' values it takes (the unit's, else the default,
//     converted to the variable's type), the locals that evaluate from
//     them, path.module and path.root ("."), and Functions; what the
//     engine may know but this package does not (path.cwd, a variable it
//     does not take) is unknown, never missing. A source that does not
//     evaluate to a known string is never guessed: it is returned with
//     its file, line and reason, and a reason names a variable, never its
//     value. SourceDirs names, for a source left to the engine whose
//     known part (the engine's other functions taken as unknown) starts
//     with a local path outside the component, the directory that path
//     names.
//   - HasDynamicSources and FromSource read the component's source
//     directory as it is, before any workdir exists; nothing here caches.
package earlyeval
