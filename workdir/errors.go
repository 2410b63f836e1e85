package workdir

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/tfisolate/tfisolate/internal/format"
)

var (
	// ErrInvalid is wrapped by every error about a bad argument: a stack,
	// instance, source or generated-file name that is empty, escapes, or
	// does not exist. Nothing is written when it is returned.
	ErrInvalid = errors.New("invalid input")

	// ErrLocked is wrapped by the error returned when the instance lock
	// could not be taken before the context ended. Use errors.As with
	// *LockedError to learn who holds it.
	ErrLocked = errors.New("instance is locked")

	// ErrHasState is returned by Remove when the workdir still holds local
	// Terraform state with resources and force was not given.
	ErrHasState = errors.New("workdir holds local state")

	// ErrLeftBehind is returned by Prepare when the component moved inside
	// the layout (a local module outside its directory appeared or went)
	// and some of the instance's data could not follow it without
	// replacing something at the new position. The error names both
	// paths; nothing was overwritten, and the next Prepare tries again.
	ErrLeftBehind = errors.New("instance data would be left behind")

	// ErrNewerFormat is wrapped by the error about a record a newer
	// release wrote (an instance's stamp, the root's register of
	// adoptions): "written by a newer release: format N; this release
	// reads up to M; upgrade this job". The record is left as it is;
	// the instance is not prepared (or the adoption not made) by this
	// release.
	ErrNewerFormat = format.ErrNewer

	// ErrSourceState is wrapped by the error Prepare returns when the
	// component source holds local state (for the backend the component
	// uses) that records resources or outputs, and the instance has no
	// state of its own: run as is, the instance would plan to create
	// everything that state records a second time (and plan none of the
	// output changes plain terraform plans against it). The same holds
	// for such state where the backend does not keep it but plain
	// terraform in the component dir would stop to ask about migrating
	// it. It is also wrapped when Spec.AdoptState cannot adopt that state
	// because the instance already has state with resources. Use
	// errors.As with *SourceStateError for the files.
	ErrSourceState = errors.New("component source holds local state")

	// ErrAdopted is wrapped, with ErrSourceState, by the error Prepare
	// returns when Spec.AdoptState asks to adopt a state that another
	// instance under the same root adopted already: the same lineage
	// (wherever the file is now) or the same source file. Adopted into a
	// second instance, it would have two instances manage the same
	// infrastructure. Nothing was copied. Use errors.As with
	// *AdoptedError for the owner.
	ErrAdopted = errors.New("state adopted by another instance")

	// ErrStateDamaged is wrapped by the error Workdir.CheckState returns
	// when the instance's local state file is empty or cut off while a
	// backup beside it, or the workdir's own record, shows the instance
	// had a state: read as is, it would be taken for "no state". Use
	// errors.As with *DamagedStateError for the files.
	ErrStateDamaged = errors.New("local state is damaged")

	// ErrUnsafePath is wrapped by the error New or Prepare returns when
	// the root, a directory above it, the root's own dirs (.locks, .tmp)
	// or an instance's home is one someone other than the effective user
	// or root owns or can write to (invariant 12): what is in it could be
	// theirs, and what the instance writes there (generated files,
	// secrets, state) would be in their reach. Use errors.As with
	// *UnsafePathError for the path, its owner and its mode.
	ErrUnsafePath = errors.New("unsafe workdir path")

	// ErrBudget is wrapped by the error Prepare returns when the files it
	// would copy from the source set exceed the Manager's
	// materialization budget (WithBudget): too many bytes or too many
	// files for one instance. The message names the file where the
	// budget ran out and the limit; nothing of the instance was written.
	ErrBudget = errors.New("materialization budget exceeded")

	// ErrOutsideRepository is wrapped by the error Prepare returns when a
	// local module call of the component, or of a local module it calls,
	// names a directory outside the component's repository (see
	// Spec.Repository): "../../../../usr/share/doc" would copy a tree
	// that is not configuration into every instance. Nothing of the
	// instance was written. Use errors.As with *OutsideRepositoryError
	// for the call, its source and the directory.
	ErrOutsideRepository = errors.New("local module source leaves the repository")
)

// UnsafePathError names a path the manager refuses to trust: its owner,
// group and mode, and what is wrong with it. It wraps ErrUnsafePath.
type UnsafePathError struct {
	Path     string
	UID, GID int         // the path's owner and group
	Mode     fs.FileMode // the path's type and permission bits
	Why      string      // what is wrong with it
	Home     bool        // the path is (in) an instance's home, not the root or above it
}

// Error names the path, its owner, group and mode, what is wrong, and
// what to do about it.
func (e *UnsafePathError) Error() string {
	fix := "use a root only you can write (chown, chmod go-w; a private dir such as one under os.UserCacheDir); " +
		"a sticky dir such as /tmp is fine above the root, not as the root"
	if e.Home {
		fix = "nothing was written in it; it is not this user's: check it holds nothing of yours, then remove it " +
			"(the next Prepare builds a fresh 0700 home), or make it yours and writable by no one else (chown, chmod 0700)"
	}
	return fmt.Sprintf("%v %s (owner uid %d, group gid %d, mode %s): %s; %s", ErrUnsafePath, e.Path, e.UID, e.GID, e.Mode, e.Why, fix)
}

// Unwrap makes errors.Is(err, ErrUnsafePath) true.
func (e *UnsafePathError) Unwrap() error { return ErrUnsafePath }

// InputError describes one bad argument. It wraps ErrInvalid.
type InputError struct {
	Field  string // "stack", "instance", "source", "file", "root", "option"
	Value  string
	Reason string
}

func (e *InputError) Error() string {
	return fmt.Sprintf("invalid %s %q: %s", e.Field, e.Value, e.Reason)
}

// Unwrap makes errors.Is(err, ErrInvalid) true.
func (e *InputError) Unwrap() error { return ErrInvalid }

func invalid(field, value, format string, args ...any) error {
	return &InputError{Field: field, Value: value, Reason: fmt.Sprintf(format, args...)}
}

// Holder says who holds an instance lock, as written by the holder right
// after it acquired the lock.
type Holder struct {
	PID   int       `json:"pid"`
	Host  string    `json:"host"`
	Since time.Time `json:"since"`
}

func (h Holder) String() string {
	return fmt.Sprintf("pid %d on %s since %s", h.PID, h.Host, h.Since.UTC().Format(time.RFC3339))
}

// LockedError is returned when Prepare or Remove gave up waiting for an
// instance lock. It wraps both ErrLocked and the context's error.
type LockedError struct {
	Stack    string
	Instance string
	LockFile string
	Holder   *Holder // nil when the holder has not (yet) said who it is
	Err      error   // context.DeadlineExceeded or context.Canceled
}

func (e *LockedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "instance %s/%s is locked", e.Stack, e.Instance)
	if e.Holder != nil {
		fmt.Fprintf(&b, " by %s", e.Holder)
	} else {
		b.WriteString(" by an unknown holder")
	}
	fmt.Fprintf(&b, " (lock file %s)", e.LockFile)
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	return b.String()
}

// Unwrap exposes ErrLocked and the context error to errors.Is.
func (e *LockedError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrLocked}
	}
	return []error{ErrLocked, e.Err}
}

// StateFile is one local state file named by an error.
type StateFile struct {
	Path string // absolute
	// Resources is how many resources it records, -1 when the SDK cannot
	// tell (an OpenTofu encrypted state, a cut-off or unreadable file):
	// such a state counts as holding resources.
	Resources int
	// Outputs is how many root module outputs it records (0 when
	// Resources is -1): a state with outputs and no resources is still
	// one a plan reads.
	Outputs int
}

// String names the file and what it records; outputs are mentioned only
// for a state without resources, where they are why it counts.
func (f StateFile) String() string {
	switch {
	case f.Resources == -1:
		return f.Path + " (resources unknown: encrypted or unreadable, counted as holding resources)"
	case f.Resources == 1:
		return f.Path + " (1 resource)"
	case f.Resources > 0:
		return fmt.Sprintf("%s (%d resources)", f.Path, f.Resources)
	case f.Outputs == 1:
		return f.Path + " (0 resources, 1 output)"
	}
	return fmt.Sprintf("%s (0 resources, %d outputs)", f.Path, f.Outputs)
}

// SourceStateError is returned by Prepare when the component source holds
// state of its own for the backend the component uses. It wraps
// ErrSourceState.
type SourceStateError struct {
	Stack, Instance string
	Source          string      // the component dir
	Files           []StateFile // the source's state files that record resources or outputs
	// Left are the source's state files, recording resources or outputs,
	// at places its backend does not use, where plain terraform run in
	// the component dir would stop to ask about migrating them: the
	// default terraform.tfstate(.d) beside another backend, or the state
	// of the local backend the component's own .terraform records.
	// AdoptState never takes them.
	Left []StateFile
	// Blocking is set when Spec.AdoptState was given but the instance
	// already has state with resources there: nothing was adopted.
	Blocking *StateFile
}

func (e *SourceStateError) Error() string {
	var b strings.Builder
	names := make([]string, len(e.Files))
	for i, f := range e.Files {
		names[i] = f.String()
	}
	if e.Blocking != nil {
		fmt.Fprintf(&b, "cannot adopt the component's state %s into instance %s/%s: its own state %s already records resources; "+
			"nothing was copied (move one of them away, or leave AdoptState unset to keep the instance's own)",
			strings.Join(names, ", "), e.Stack, e.Instance, e.Blocking)
		return b.String()
	}
	if len(e.Files) > 0 {
		// A state of outputs only has nothing to create again; a plan
		// without it still differs (plain terraform plans against them).
		consequence := "it would plan without them"
		for _, f := range e.Files {
			if f.Resources != 0 {
				consequence = "it would plan to create all of that again"
			}
		}
		fmt.Fprintf(&b, "component source %s holds local state: %s; instance %s/%s has no state of its own, "+
			"so %s. "+
			"To make this one instance own that state, prepare it with Spec.AdoptState set (copied once into its workdir, then never again); "+
			"if the state belongs to no instance run here, or another instance adopted it already, move it out of the component dir",
			e.Source, strings.Join(names, ", "), e.Stack, e.Instance, consequence)
	}
	if len(e.Left) > 0 {
		left := make([]string, len(e.Left))
		for i, f := range e.Left {
			left[i] = f.String()
		}
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "component source %s holds local state its backend does not use: %s; plain terraform in that dir would stop to ask about migrating it, "+
			"and instance %s/%s, with no state of its own, would plan without it. "+
			"Migrate it there with plain terraform (terraform init -migrate-state), or move it out of the component dir if it records nothing real; Spec.AdoptState does not take it",
			e.Source, strings.Join(left, ", "), e.Stack, e.Instance)
	}
	return b.String()
}

// Unwrap makes errors.Is(err, ErrSourceState) true.
func (e *SourceStateError) Unwrap() error { return ErrSourceState }

// Owner is the instance that adopted a state (see Spec.AdoptState).
type Owner struct {
	// Stack and Instance name the owner. They are empty only for an
	// adoption made by an older version of the SDK, which recorded it in
	// the owner's workdir alone: ID then names the owner.
	Stack, Instance string
	ID              string    // the owner's workdir ID (see ID)
	Source          string    // the state file it adopted, in its component source
	Lineage         string    // that state's lineage; "" when it had none the SDK could read
	Time            time.Time // when it adopted it
}

// String names the owner as stack/instance, or by its workdir ID.
func (o Owner) String() string {
	if o.Stack == "" && o.Instance == "" {
		return "the instance with workdir " + o.ID
	}
	return "instance " + o.Stack + "/" + o.Instance
}

// AdoptedError is returned by Prepare when Spec.AdoptState asks to adopt
// a state another instance under the same root adopted already. Nothing
// was copied into the instance's workdir. It wraps ErrAdopted and
// ErrSourceState.
type AdoptedError struct {
	Stack, Instance string    // the instance that asked to adopt
	File            StateFile // the component source's state file it asked for
	Lineage         string    // File's lineage; "" when the SDK could not read one
	Owner           Owner     // who adopted that state (Owners[0])
	// Owners is every instance that holds that state now, as the
	// instances' own records show it, oldest adoption first; never one
	// whose workdir is gone. More than one means a release of the SDK
	// without the root's register adopted it again.
	Owners []Owner
}

// Error names the instance, every owner, the state and what to do.
func (e *AdoptedError) Error() string {
	owners := e.Owners
	if len(owners) == 0 {
		owners = []Owner{e.Owner}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%v: cannot adopt the component's state %s into instance %s/%s: ", ErrAdopted, e.File, e.Stack, e.Instance)
	names := make([]string, len(owners))
	for i, o := range owners {
		names[i] = o.String()
		same := "the same file"
		if e.Lineage != "" && e.Lineage == o.Lineage {
			same = "the same state, lineage " + e.Lineage
			if o.Source != e.File.Path {
				same += ", copied from " + o.Source
			}
		}
		if !o.Time.IsZero() {
			same += ", at " + o.Time.UTC().Format(time.RFC3339)
		}
		if i > 0 {
			b.WriteString(", and so did ")
		}
		fmt.Fprintf(&b, "%s", o)
		if i == 0 {
			b.WriteString(" adopted it already")
		}
		fmt.Fprintf(&b, " (%s)", same)
	}
	b.WriteString("; two instances would each manage the same infrastructure, so nothing was copied. ")
	owner := "the owner's workdir"
	if len(owners) == 1 {
		fmt.Fprintf(&b, "The owner, %s, runs on its own copy of it in its workdir. ", owners[0])
	} else {
		owner = "the owners' workdirs"
		fmt.Fprintf(&b, "The owners, %s, each run on their own copy of it in their workdirs: a release of the SDK without the root's register adopted it more than once, "+
			"so they manage the same infrastructure already; decide which one manages it (compare their copies) and remove the others' workdirs "+
			"(Manager.Remove with force deletes their copies). ", strings.Join(names, " and "))
	}
	fmt.Fprintf(&b, "To give %[1]s/%[2]s a state of its own, move %[3]s out of the component dir and prepare it without AdoptState; "+
		"to hand the state over to %[1]s/%[2]s, remove %[4]s first (Manager.Remove releases the adoption; "+
		"keep a copy of the state, which may be newer than the component's), then adopt again",
		e.Stack, e.Instance, e.File.Path, owner)
	return b.String()
}

// Unwrap makes errors.Is(err, ErrAdopted) and errors.Is(err,
// ErrSourceState) true.
func (e *AdoptedError) Unwrap() []error { return []error{ErrAdopted, ErrSourceState} }

// DamagedStateError is returned by Workdir.CheckState when the instance's
// local state file is empty or cut off while the instance had a state. It
// wraps ErrStateDamaged.
type DamagedStateError struct {
	File   string // the damaged state file
	Empty  bool   // 0 bytes (or only whitespace) rather than cut off
	Backup string // the backup beside it, "" when there is none
	// Lineage and Serial are of the last complete state the workdir saw
	// at File ("" and 0 when it saw none).
	Lineage string
	Serial  uint64
}

func (e *DamagedStateError) Error() string {
	var b strings.Builder
	what := "is cut off (not a complete state document)"
	if e.Empty {
		what = "is empty"
	}
	fmt.Fprintf(&b, "%v: %s %s, but this instance had a state", ErrStateDamaged, e.File, what)
	var shown []string
	if e.Backup != "" {
		shown = append(shown, "the backup "+e.Backup)
	}
	if e.Lineage != "" {
		shown = append(shown, fmt.Sprintf("the workdir's record of lineage %s, serial %d", e.Lineage, e.Serial))
	}
	switch len(shown) {
	case 1:
		fmt.Fprintf(&b, " (as %s shows)", shown[0])
	case 2:
		fmt.Fprintf(&b, " (as %s and %s show)", shown[0], shown[1])
	}
	b.WriteString("; most likely a run was killed while writing it. Nothing will run against it: it would be read as no state and everything created again. ")
	if e.Backup != "" {
		fmt.Fprintf(&b, "The backup is not restored automatically: it is the state from before the interrupted run and lacks whatever that run created. "+
			"To recover: 1. keep the damaged file: mv %[1]s %[1]s.damaged; "+
			"2. cp %[2]s %[1]s; "+
			"3. plan: whatever the interrupted run created is missing from that state, so find each such object (the run's log names them) and import it, or delete it; "+
			"4. run again. ", e.File, e.Backup)
	} else {
		fmt.Fprintf(&b, "There is no backup to start from: keep the damaged file (mv %[1]s %[1]s.damaged), "+
			"put a complete copy of the state at %[1]s (from your own copies, or rebuilt by importing each object), then run again. ", e.File)
	}
	fmt.Fprintf(&b, "Only if the instance manages nothing any more, delete %s and its backup to start with no state", e.File)
	return b.String()
}

// Unwrap makes errors.Is(err, ErrStateDamaged) true.
func (e *DamagedStateError) Unwrap() error { return ErrStateDamaged }
