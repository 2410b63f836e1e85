package workdir

import "github.com/tfisolate/tfisolate/internal/modtree"

// Engine names the engine that will run an instance's workdir (see
// Spec.Engine). It decides which files of the component and of its local
// modules are configuration, and with them which local modules the
// layout must hold, where the local backend keeps the instance's state,
// and which terraform_remote_state files are inputs: terraform reads
// *.tf and *.tf.json; OpenTofu also reads *.tofu and *.tofu.json, and a
// NAME.tofu hides NAME.tf (a NAME.tofu.json hides NAME.tf.json). The
// source files themselves are copied whatever the engine.
type Engine string

const (
	// Terraform is terraform's rule; the empty Engine means it too.
	Terraform Engine = "terraform"
	// OpenTofu is OpenTofu's rule (1.8 and later).
	OpenTofu Engine = "tofu"
)

// files returns e's configuration rule, and false for an unknown
// engine.
func (e Engine) files() (modtree.Files, bool) {
	switch e {
	case "", Terraform:
		return modtree.TerraformFiles, true
	case OpenTofu:
		return modtree.TofuFiles, true
	}
	return modtree.TerraformFiles, false
}

// stampEngine is how a stamp records the rule a build followed: "" for
// terraform's (what stamps from before the field meant), "tofu" for
// OpenTofu's.
func stampEngine(f modtree.Files) string {
	if f == modtree.TofuFiles {
		return string(OpenTofu)
	}
	return ""
}

// stampFiles is the rule a stamp records (nil: terraform's).
func stampFiles(st *stamp) modtree.Files {
	if st != nil && st.Engine == string(OpenTofu) {
		return modtree.TofuFiles
	}
	return modtree.TerraformFiles
}
