// Package tfcmd is the one way tfisolate runs terraform (or tofu)
// processes: each command's argument list is built from a typed options
// struct (one file per command), a Process runs it in a unit's directory
// with the unit's environment, and what it prints is parsed here too
// (the machine-readable UI of plan, apply and destroy; output -json;
// show -json). A failure is an *Error with the command, its exit code
// and what terraform said.
//
// It is tfisolate's own layer rather than terraform-exec's: the runner
// needs one process per command (terraform-exec runs `terraform version
// -json` before the first command of every *tfexec.Terraform), the
// unit's environment as is (terraform-exec refuses TF_VAR_* and TF_LOG*,
// which then could not keep terraform's own precedence), and the
// machine-readable UI of apply for outputs. Nothing here knows about
// units, workdirs or the runner's errors: the runner maps its Args onto
// the options and wraps the errors.
package tfcmd
