package pluginc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/go-version"
	"github.com/hashicorp/hcl"
	"github.com/hashicorp/hcl/hcl/ast"
	hclparser "github.com/hashicorp/hcl/hcl/parser"
	hclscanner "github.com/hashicorp/hcl/hcl/scanner"
	hcltoken "github.com/hashicorp/hcl/hcl/token"
	tfaddr "github.com/hashicorp/terraform-registry-address"
	svchost "github.com/hashicorp/terraform-svchost"
)

// CLIConfigFile is a user's Terraform (or OpenTofu) CLI configuration file
// as the engine reads it: HCL 1 native syntax or JSON, decoded with the
// same library and the same rules. ReadCLIConfig fills it; Cache.CLIConfigFor
// merges it with the cache's provider installation, WithCLIConfig gives its
// credentials to the cache's own requests, and Sources turns its
// provider_installation into the cache's sources.
type CLIConfigFile struct {
	// Path is the file it was read from (after Merge, both files, joined
	// by ", "). It names the file in errors.
	Path string

	// Credentials holds the credentials "HOST" { token = "..." } blocks:
	// each block's arguments by host name as written. Terraform reads the
	// token argument (a string) and nothing else.
	Credentials map[string]map[string]any

	// CredentialsHelpers holds the credentials_helper "NAME" { args = [...] }
	// block: its args by name. Terraform allows at most one.
	CredentialsHelpers map[string][]string

	// Hosts holds the host "NAME" { services = {...} } blocks: each
	// block's services map by host name, as HCL 1 decodes it. Terraform
	// uses it instead of service discovery for that host; so does the
	// cache under WithCLIConfig (for "providers.v1").
	Hosts map[string]map[string]any

	// DisableCheckpoint and DisableCheckpointSignature are Terraform's
	// disable_checkpoint and disable_checkpoint_signature settings.
	DisableCheckpoint          bool
	DisableCheckpointSignature bool

	// PluginCacheDir is the plugin_cache_dir setting, kept so a caller can
	// see it was set. It is never used: CLIConfigFor leaves it out, since
	// Terraform's writes into a plugin cache are not safe under
	// concurrency; the shared cache takes its place.
	PluginCacheDir string

	// ProviderInstallation is the provider_installation block, or nil when
	// the file has none (Terraform then installs directly from each
	// provider's registry, after its implied local plugin directories).
	ProviderInstallation *ProviderInstallation

	// Other holds every other top-level setting as HCL 1 decodes it (the
	// legacy providers and provisioners maps,
	// plugin_cache_may_break_dependency_lock_file, OpenTofu's
	// oci_credentials blocks, ...), by name. CLIConfigFor passes them
	// through unchanged.
	Other map[string]any

	// DefaultRegistryHost is the host that two-part include and exclude
	// patterns ("NAMESPACE/TYPE") name, as for the engine that reads the
	// file. Empty means Terraform's default registry host
	// (tfaddr.DefaultProviderRegistryHost); set OpenTofu's for a file
	// OpenTofu reads.
	DefaultRegistryHost string
}

// ProviderInstallation is a provider_installation block.
type ProviderInstallation struct {
	// Methods are the installation methods in the order written.
	Methods []InstallMethod
	// DevOverrides is the dev_overrides block: a local directory by
	// provider source address as written. It passes through CLIConfigFor
	// to Terraform; Sources ignores it (an overridden provider is never
	// installed).
	DevOverrides map[string]string

	file string
	line int
}

// InstallMethod is one installation method of a provider_installation block.
type InstallMethod struct {
	// Kind is the block type: "direct", "filesystem_mirror",
	// "network_mirror", or OpenTofu's "oci_mirror".
	Kind string
	// Location is a filesystem_mirror's path or a network_mirror's url;
	// empty for other kinds.
	Location string
	// Include and Exclude are the provider patterns as written
	// ("HOST/NAMESPACE/TYPE" or "NAMESPACE/TYPE", each part may be "*").
	Include, Exclude []string
	// Other holds the block's other arguments as HCL 1 decodes them (an
	// oci_mirror's repository_template), passed through by CLIConfigFor.
	Other map[string]any

	file string
	line int
}

// cliSettingKeys are the top-level settings CLIConfigFile models. HCL 1's
// decoder matches setting names case-insensitively, as Terraform reads
// them; provider_installation is decoded by name, exactly as Terraform does.
var cliSettingKeys = []string{"credentials", "credentials_helper", "host", "disable_checkpoint",
	"disable_checkpoint_signature", "plugin_cache_dir"}

// ReadCLIConfig reads a Terraform CLI configuration file (the file that
// TF_CLI_CONFIG_FILE names, ~/.terraformrc, or a *.tfrc / *.tfrc.json file
// in Terraform's config directory). Like Terraform it reads HCL 1 native
// syntax, or JSON when the first non-space character is "{". A file that
// cannot be read is an error wrapping the os error; a file Terraform would
// refuse (bad syntax, a misshapen block, an invalid host name, two
// provider_installation blocks, an unknown installation method, a bad
// include or exclude pattern) is a *CLIConfigError naming the file and
// the line, wrapping ErrInvalidCLIConfig.
func ReadCLIConfig(path string) (*CLIConfigFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read CLI config: %w", err)
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return parseCLIConfig(path, b)
}

// cliParser holds what parsing one file needs to name lines.
type cliParser struct {
	path  string
	json  bool
	jsonL map[string][]int // JSON key path -> line of each occurrence
	seen  map[string]int   // occurrences of a JSON key path handed out so far
}

func (p *cliParser) errorf(line int, format string, args ...any) error {
	return &CLIConfigError{Path: p.path, Line: line, Msg: fmt.Sprintf(format, args...)}
}

// line returns the line of an item whose key path (its parents', then its
// own keys) is path. HCL 1's JSON tokens carry no positions, so for JSON
// the line comes from a scan of the raw text, occurrence by occurrence.
func (p *cliParser) line(item *ast.ObjectItem, parents ...string) int {
	if !p.json {
		return item.Pos().Line
	}
	keys := slices.Clone(parents)
	for _, k := range item.Keys {
		keys = append(keys, keyString(k))
	}
	k := strings.Join(keys, "\x00")
	n := p.seen[k]
	p.seen[k] = n + 1
	if ls := p.jsonL[k]; n < len(ls) {
		return ls[n]
	}
	return 0
}

func keyString(k *ast.ObjectKey) string {
	if s, ok := k.Token.Value().(string); ok {
		return s
	}
	return k.Token.Text
}

// cliSettings are the settings Terraform decodes with HCL 1's decoder,
// with the same field tags.
type cliSettings struct {
	DisableCheckpoint          bool   `hcl:"disable_checkpoint"`
	DisableCheckpointSignature bool   `hcl:"disable_checkpoint_signature"`
	PluginCacheDir             string `hcl:"plugin_cache_dir"`
	Hosts                      map[string]*struct {
		Services map[string]any `hcl:"services"`
	} `hcl:"host"`
	Credentials        map[string]map[string]any `hcl:"credentials"`
	CredentialsHelpers map[string]*struct {
		Args []string `hcl:"args"`
	} `hcl:"credentials_helper"`
}

func parseCLIConfig(path string, src []byte) (*CLIConfigFile, error) {
	p := &cliParser{path: path, json: isJSON(src), seen: map[string]int{}}
	file, err := hcl.ParseBytes(src)
	if err != nil {
		line, msg := parseErrorLine(src, p.json, err)
		return nil, p.errorf(line, "%s", msg)
	}
	if p.json {
		p.jsonL = jsonKeyLines(src)
	}
	root, ok := file.Node.(*ast.ObjectList)
	if !ok {
		return nil, p.errorf(1, "the file is not an object of settings")
	}
	f := &CLIConfigFile{Path: path}

	// The settings Terraform decodes with HCL 1's decoder, decoded the
	// same way. A decoder error is traced to its item for the line.
	var typed cliSettings
	lines := make([]int, len(root.Items))
	for i, item := range root.Items {
		lines[i] = p.line(item)
	}
	if err := hcl.DecodeObject(&typed, root); err != nil {
		line := 0
		for i, item := range root.Items {
			var one cliSettings
			if hcl.DecodeObject(&one, &ast.ObjectList{Items: []*ast.ObjectItem{item}}) != nil {
				line = lines[i]
				break
			}
		}
		return nil, p.errorf(line, "%s", decodeMessage(err))
	}
	f.DisableCheckpoint, f.DisableCheckpointSignature = typed.DisableCheckpoint, typed.DisableCheckpointSignature
	f.PluginCacheDir = typed.PluginCacheDir

	// Checks Terraform makes once the file is decoded, each at its line.
	helpers := map[string]bool{}
	var other []*ast.ObjectItem
	for i, item := range root.Items {
		key := keyString(item.Keys[0])
		label := ""
		if len(item.Keys) > 1 {
			label = keyString(item.Keys[1])
		}
		switch {
		case key == "provider_installation":
			if f.ProviderInstallation != nil {
				return nil, p.errorf(lines[i], "a second provider_installation block (the first is on line %d); Terraform allows only one", f.ProviderInstallation.line)
			}
			pi, err := p.installation(item, lines[i])
			if err != nil {
				return nil, err
			}
			f.ProviderInstallation = pi
		case strings.EqualFold(key, "credentials_helper"):
			helpers[label] = true
			if len(helpers) > 1 {
				return nil, p.errorf(lines[i], "a second credentials_helper block (%q); Terraform allows only one", label)
			}
		case !slices.ContainsFunc(cliSettingKeys, func(k string) bool { return strings.EqualFold(k, key) }):
			other = append(other, item)
		}
	}
	// Host names are checked as Terraform checks them: the decoded ones.
	for _, kind := range []string{"credentials", "host"} {
		names := slices.Collect(maps.Keys(typed.Credentials))
		if kind == "host" {
			names = slices.Collect(maps.Keys(typed.Hosts))
		}
		slices.Sort(names)
		for _, name := range names {
			if _, err := svchost.ForComparison(name); err != nil {
				return nil, p.errorf(itemLine(root, lines, kind, name), "the %s %q block has an invalid host name: %v", kind, name, err)
			}
		}
	}
	for host, attrs := range typed.Credentials {
		if tok, ok := attrs["token"]; ok {
			if _, ok := tok.(string); !ok {
				return nil, p.errorf(itemLine(root, lines, "credentials", host), "credentials %q: token must be a string", host)
			}
		}
		if f.Credentials == nil {
			f.Credentials = map[string]map[string]any{}
		}
		f.Credentials[host] = attrs
	}
	for name, h := range typed.CredentialsHelpers {
		if f.CredentialsHelpers == nil {
			f.CredentialsHelpers = map[string][]string{}
		}
		var args []string
		if h != nil {
			args = h.Args
		}
		f.CredentialsHelpers[name] = args
	}
	for name, h := range typed.Hosts {
		if f.Hosts == nil {
			f.Hosts = map[string]map[string]any{}
		}
		services := map[string]any{}
		if h != nil && h.Services != nil {
			services = h.Services
		}
		f.Hosts[name] = services
	}
	if len(other) > 0 {
		if err := hcl.DecodeObject(&f.Other, &ast.ObjectList{Items: other}); err != nil {
			return nil, p.errorf(0, "%s", decodeMessage(err))
		}
	}
	return f, nil
}

// itemLine finds the line of the first top-level item KIND "LABEL".
func itemLine(root *ast.ObjectList, lines []int, kind, label string) int {
	for i, item := range root.Items {
		if len(item.Keys) > 1 && strings.EqualFold(keyString(item.Keys[0]), kind) && keyString(item.Keys[1]) == label {
			return lines[i]
		}
	}
	return 0
}

// installation decodes a provider_installation block with the checks
// Terraform makes, each error at its line.
func (p *cliParser) installation(item *ast.ObjectItem, line int) (*ProviderInstallation, error) {
	if !p.json && item.Assign.Line != 0 {
		return nil, p.errorf(line, "provider_installation must be a block, not an argument (no \"=\")")
	}
	if !p.json && len(item.Keys) > 1 {
		return nil, p.errorf(line, "the provider_installation block takes no labels")
	}
	body, ok := item.Val.(*ast.ObjectType)
	if !ok {
		return nil, p.errorf(line, "provider_installation must be a block")
	}
	pi := &ProviderInstallation{file: p.path, line: line}
	parents := make([]string, 0, len(item.Keys))
	for _, k := range item.Keys {
		parents = append(parents, keyString(k))
	}
	for _, mb := range body.List.Items {
		kind := keyString(mb.Keys[0])
		ml := p.line(mb, parents...)
		if ml == 0 {
			ml = line
		}
		if !p.json && mb.Assign.Line != 0 {
			return nil, p.errorf(ml, "%s inside provider_installation must be a block, not an argument (no \"=\")", kind)
		}
		if !p.json && len(mb.Keys) > 1 {
			return nil, p.errorf(ml, "the %s block takes no labels", kind)
		}
		mbody, ok := mb.Val.(*ast.ObjectType)
		if !ok {
			return nil, p.errorf(ml, "%s inside provider_installation must be a block", kind)
		}
		if kind == "dev_overrides" {
			if len(pi.Methods) > 0 {
				return nil, p.errorf(ml, "dev_overrides must come before every installation method")
			}
			var raw map[string]string
			if err := hcl.DecodeObject(&raw, mbody); err != nil {
				return nil, p.errorf(ml, "dev_overrides: %s", decodeMessage(err))
			}
			for addr, dir := range raw {
				if _, err := tfaddr.ParseProviderSource(addr); err != nil {
					return nil, p.errorf(ml, "dev_overrides: %q is not a provider source address: %s", addr, oneLine(err.Error()))
				}
				if pi.DevOverrides == nil {
					pi.DevOverrides = map[string]string{}
				}
				pi.DevOverrides[addr] = dir
			}
			continue
		}
		m, err := p.method(kind, mbody, ml)
		if err != nil {
			return nil, err
		}
		pi.Methods = append(pi.Methods, m)
	}
	return pi, nil
}

// method decodes one installation method's body.
func (p *cliParser) method(kind string, body *ast.ObjectType, line int) (InstallMethod, error) {
	var loc string
	switch kind {
	case "filesystem_mirror":
		loc = "path"
	case "network_mirror":
		loc = "url"
	case "direct", "oci_mirror":
	default:
		return InstallMethod{}, p.errorf(line, "unknown provider installation method %q (want direct, filesystem_mirror, network_mirror or dev_overrides)", kind)
	}
	var content struct {
		Path    string   `hcl:"path"`
		URL     string   `hcl:"url"`
		Include []string `hcl:"include"`
		Exclude []string `hcl:"exclude"`
	}
	if err := hcl.DecodeObject(&content, body); err != nil {
		return InstallMethod{}, p.errorf(line, "%s: %s", kind, decodeMessage(err))
	}
	m := InstallMethod{Kind: kind, Include: content.Include, Exclude: content.Exclude, file: p.path, line: line}
	switch loc {
	case "path":
		m.Location = content.Path
	case "url":
		m.Location = content.URL
	}
	if loc != "" && m.Location == "" {
		return InstallMethod{}, p.errorf(line, "%s: the %q argument is required", kind, loc)
	}
	for _, pat := range slices.Concat(m.Include, m.Exclude) {
		if _, err := parsePattern(pat, ""); err != nil {
			return InstallMethod{}, p.errorf(line, "%s: %v", kind, err)
		}
	}
	var rest []*ast.ObjectItem
	for _, it := range body.List.Items {
		k := keyString(it.Keys[0])
		if strings.EqualFold(k, "include") || strings.EqualFold(k, "exclude") || (loc != "" && strings.EqualFold(k, loc)) {
			continue
		}
		rest = append(rest, it)
	}
	if len(rest) > 0 {
		if err := hcl.DecodeObject(&m.Other, &ast.ObjectList{Items: rest}); err != nil {
			return InstallMethod{}, p.errorf(line, "%s: %s", kind, decodeMessage(err))
		}
	}
	return m, nil
}

// decodeMessage is an HCL decoder error without its position prefix
// (JSON positions are all 0:0) and the decoder's "root." path prefix.
func decodeMessage(err error) string {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "At "); ok {
		if _, after, ok := strings.Cut(rest, ": "); ok {
			msg = after
		}
	}
	return strings.TrimPrefix(msg, "root.")
}

// isJSON says whether HCL 1 reads src as JSON: when its first non-space
// character is "{".
func isJSON(src []byte) bool {
	for len(src) > 0 {
		r, n := utf8.DecodeRune(src)
		if !unicode.IsSpace(r) {
			return r == '{'
		}
		src = src[n:]
	}
	return false
}

// parseErrorLine finds the line of a parse error. HCL 1 gives positions
// for most native syntax errors; for the others (an unclosed brace or a
// key at the end of the file) and for every JSON error it gives none, so
// the line comes from a scan of the text.
func parseErrorLine(src []byte, isJSON bool, err error) (int, string) {
	msg := err.Error()
	var pe *hclparser.PosError
	if errors.As(err, &pe) && pe.Pos.Line > 0 {
		msg = pe.Err.Error()
		if !strings.Contains(msg, "EOF") {
			return pe.Pos.Line, msg
		}
		// At the end of the file: what was left open says more.
	}
	if isJSON {
		// HCL 1's JSON scanner puts "LINE:COL: " in front of its errors;
		// its parser names no position at all.
		if m := posPrefix.FindStringSubmatch(msg); m != nil {
			line, _ := strconv.Atoi(m[1])
			return line, m[2]
		}
		var v any
		var se *json.SyntaxError
		if jerr := json.Unmarshal(src, &v); errors.As(jerr, &se) {
			return lineAt(src, int(se.Offset)), msg + " (" + se.Error() + ")"
		}
		return 0, msg
	}
	// Native syntax: the innermost brace or bracket left open, else the
	// last token.
	type open struct {
		line int
		text string
	}
	var stack []open
	last := 0
	s := hclscanner.New(src)
	for tok := s.Scan(); tok.Type != hcltoken.EOF && tok.Type != hcltoken.ILLEGAL; tok = s.Scan() {
		if tok.Type == hcltoken.COMMENT {
			continue
		}
		last = tok.Pos.Line
		switch tok.Type {
		case hcltoken.LBRACE, hcltoken.LBRACK:
			stack = append(stack, open{tok.Pos.Line, tok.Text})
		case hcltoken.RBRACE, hcltoken.RBRACK:
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		}
	}
	if len(stack) > 0 {
		o := stack[len(stack)-1]
		return o.line, fmt.Sprintf("%s (the %q on this line is never closed)", msg, o.text)
	}
	return last, msg
}

var posPrefix = regexp.MustCompile(`^(\d+):\d+: (.*)$`)

// lineAt is the 1-based line of byte offset off in src.
func lineAt(src []byte, off int) int {
	off = min(max(off, 0), len(src))
	return bytes.Count(src[:off], []byte("\n")) + 1
}

// jsonKeyLines maps every object key path in a JSON document (keys from
// the root, arrays skipped, joined by NUL: the key path HCL 1 gives an
// item once it flattens the document) to the line of each of its
// occurrences, in document order. A document encoding/json cannot read
// (HCL 1's JSON parser is more lenient) yields what was read before the
// problem.
func jsonKeyLines(src []byte) map[string][]int {
	out := map[string][]int{}
	dec := json.NewDecoder(bytes.NewReader(src))
	type frame struct{ obj, wantKey bool }
	var stack []frame
	var path []string
	endValue := func() {
		if n := len(stack); n > 0 && stack[n-1].obj {
			path = path[:len(path)-1]
			stack[n-1].wantKey = true
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return out
		}
		if n := len(stack); n > 0 && stack[n-1].obj && stack[n-1].wantKey {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:n-1]
				endValue()
				continue
			}
			key, _ := tok.(string)
			path = append(path, key)
			k := strings.Join(path, "\x00")
			// The key's closing quote is the byte before the offset; a key
			// holds no raw newline.
			out[k] = append(out[k], lineAt(src, int(dec.InputOffset())-1))
			stack[n-1].wantKey = false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, frame{obj: true, wantKey: true})
		case json.Delim('['):
			stack = append(stack, frame{})
		case json.Delim('}'), json.Delim(']'):
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			endValue()
		default:
			endValue()
		}
	}
}

// Merge returns the settings of f and then later, merged the way
// Terraform merges its CLI config files (~/.terraformrc first, then every
// *.tfrc and *.tfrc.json file in its config directory in name order, such
// as the credentials.tfrc.json that terraform login writes):
// credentials, credentials helpers, hosts and other settings from later
// replace those of the same name, disable_checkpoint* are set if either
// sets them, the first plugin_cache_dir set stays. Two files with a
// provider_installation block, or with two different credentials helpers
// between them, are an error naming both files, as Terraform refuses
// them. Neither input is changed.
func (f *CLIConfigFile) Merge(later *CLIConfigFile) (*CLIConfigFile, error) {
	if f == nil || later == nil {
		return nil, errors.New("merge CLI configs: nil file")
	}
	out := &CLIConfigFile{
		Path:                       f.Path + ", " + later.Path,
		DisableCheckpoint:          f.DisableCheckpoint || later.DisableCheckpoint,
		DisableCheckpointSignature: f.DisableCheckpointSignature || later.DisableCheckpointSignature,
		PluginCacheDir:             cmpOr(f.PluginCacheDir, later.PluginCacheDir),
		DefaultRegistryHost:        cmpOr(f.DefaultRegistryHost, later.DefaultRegistryHost),
		Credentials:                mergeMaps(f.Credentials, later.Credentials),
		CredentialsHelpers:         mergeMaps(f.CredentialsHelpers, later.CredentialsHelpers),
		Hosts:                      mergeMaps(f.Hosts, later.Hosts),
		Other:                      mergeMaps(f.Other, later.Other),
		ProviderInstallation:       f.ProviderInstallation,
	}
	if later.ProviderInstallation != nil {
		if f.ProviderInstallation != nil {
			return nil, fmt.Errorf("%w: %s and %s both have a provider_installation block; Terraform allows only one", ErrInvalidCLIConfig, f.Path, later.Path)
		}
		out.ProviderInstallation = later.ProviderInstallation
	}
	if len(out.CredentialsHelpers) > 1 {
		return nil, fmt.Errorf("%w: %s and %s name %d credentials helpers between them; Terraform allows only one", ErrInvalidCLIConfig, f.Path, later.Path, len(out.CredentialsHelpers))
	}
	return out, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func mergeMaps[V any](a, b map[string]V) map[string]V {
	if len(a)+len(b) == 0 {
		return nil
	}
	out := make(map[string]V, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// Sources returns the cache's sources for the file's provider_installation
// block, method by method in order: network_mirror is NetworkMirror(url),
// filesystem_mirror is FilesystemMirror(path) (which reads Terraform's
// packed and unpacked layouts), direct is Registry(). A method's include
// and exclude patterns are honoured as Terraform honours them: the source
// offers only providers that some include pattern matches (all, without
// include) and no exclude pattern matches. Without a provider_installation
// block the result is Registry() alone; Terraform's implied local plugin
// directories (~/.terraform.d/plugins and the like) are not searched.
// dev_overrides are left to Terraform (an overridden provider is never
// installed).
//
// Errors name the file and the line: a block with no installation method
// (nothing could be installed), a network_mirror URL that is not https,
// a relative filesystem_mirror path (Terraform resolves it against each
// working directory, so it names no one place the cache could read), and
// OpenTofu's oci_mirror, which the cache cannot follow.
func (f *CLIConfigFile) Sources() ([]Source, error) {
	pi := f.ProviderInstallation
	if pi == nil {
		return []Source{Registry()}, nil
	}
	if len(pi.Methods) == 0 {
		return nil, &CLIConfigError{Path: pi.file, Line: pi.line, Msg: "provider_installation has no installation method, so no provider could be installed"}
	}
	out := make([]Source, 0, len(pi.Methods))
	for _, m := range pi.Methods {
		bad := func(format string, args ...any) error {
			return &CLIConfigError{Path: m.file, Line: m.line, Msg: m.Kind + ": " + fmt.Sprintf(format, args...)}
		}
		var s Source
		switch m.Kind {
		case "direct":
			s = Registry()
		case "network_mirror":
			u, err := url.Parse(m.Location)
			if err != nil || u.Scheme != "https" || u.Host == "" {
				return nil, bad("url %q is not an absolute https URL", m.Location)
			}
			s = NetworkMirror(m.Location)
		case "filesystem_mirror":
			if !filepath.IsAbs(m.Location) {
				return nil, bad("path %q is relative: Terraform resolves it against each working directory, so the cache cannot read it; give an absolute path", m.Location)
			}
			s = FilesystemMirror(m.Location)
		default:
			return nil, bad("the cache cannot install providers from an %s", m.Kind)
		}
		if len(m.Include)+len(m.Exclude) > 0 {
			fs := &filteredSource{src: s}
			for _, pat := range m.Include {
				pp, err := parsePattern(pat, f.DefaultRegistryHost)
				if err != nil {
					return nil, bad("%v", err)
				}
				fs.include = append(fs.include, pp)
			}
			for _, pat := range m.Exclude {
				pp, err := parsePattern(pat, f.DefaultRegistryHost)
				if err != nil {
					return nil, bad("%v", err)
				}
				fs.exclude = append(fs.exclude, pp)
			}
			fs.desc = describePatterns(m.Include, m.Exclude)
			s = fs
		}
		out = append(out, s)
	}
	return out, nil
}

// providerPattern is an include or exclude pattern: host (comparison
// form), namespace and type, each of which may be "*".
type providerPattern struct{ host, namespace, typ string }

// parsePattern parses a pattern as Terraform does: "HOST/NAMESPACE/TYPE"
// or "NAMESPACE/TYPE" (on defaultHost, Terraform's registry when empty);
// a wildcard host needs wildcard namespace and type, a wildcard namespace
// a wildcard type.
func parsePattern(s, defaultHost string) (providerPattern, error) {
	parts := strings.Split(s, "/")
	if len(parts) < 2 || len(parts) > 3 {
		return providerPattern{}, fmt.Errorf("provider pattern %q: want HOST/NAMESPACE/TYPE or NAMESPACE/TYPE", s)
	}
	var pp providerPattern
	host := defaultHost
	if host == "" {
		host = tfaddr.DefaultProviderRegistryHost.String()
	}
	if len(parts) == 3 {
		host, parts = parts[0], parts[1:]
	}
	if host == "*" {
		pp.host = "*"
	} else {
		h, err := svchost.ForComparison(host)
		if err != nil {
			return providerPattern{}, fmt.Errorf("provider pattern %q: bad host name: %v", s, err)
		}
		pp.host = h.String()
	}
	for i, part := range parts {
		if part != "*" {
			n, err := tfaddr.ParseProviderPart(part)
			if err != nil {
				return providerPattern{}, fmt.Errorf("provider pattern %q: %q is neither * nor a valid name", s, part)
			}
			part = n
		}
		if i == 0 {
			pp.namespace = part
		} else {
			pp.typ = part
		}
	}
	if pp.host == "*" && (pp.namespace != "*" || pp.typ != "*") {
		return providerPattern{}, fmt.Errorf("provider pattern %q: a wildcard host needs a wildcard namespace and type", s)
	}
	if pp.namespace == "*" && pp.typ != "*" {
		return providerPattern{}, fmt.Errorf("provider pattern %q: a wildcard namespace needs a wildcard type", s)
	}
	return pp, nil
}

func (pp providerPattern) matches(p Provider) bool {
	if pp.host != "*" {
		h, err := svchost.ForComparison(p.Hostname)
		if err != nil || h.String() != pp.host {
			return false
		}
	}
	return (pp.namespace == "*" || pp.namespace == p.Namespace) && (pp.typ == "*" || pp.typ == p.Type)
}

// filteredSource offers only the providers a method's include and exclude
// patterns let through; exclusion wins, as in Terraform.
type filteredSource struct {
	src              Source
	include, exclude []providerPattern
	desc             string
}

func (s *filteredSource) allows(p Provider) bool {
	for _, pp := range s.exclude {
		if pp.matches(p) {
			return false
		}
	}
	if len(s.include) == 0 {
		return true
	}
	for _, pp := range s.include {
		if pp.matches(p) {
			return true
		}
	}
	return false
}

func describePatterns(include, exclude []string) string {
	var parts []string
	if len(include) > 0 {
		parts = append(parts, "include "+strings.Join(include, ", "))
	}
	if len(exclude) > 0 {
		parts = append(parts, "exclude "+strings.Join(exclude, ", "))
	}
	return strings.Join(parts, "; ")
}

// String names the source and its patterns.
func (s *filteredSource) String() string { return s.src.String() + " (" + s.desc + ")" }

func (s *filteredSource) versions(ctx context.Context, env *fetchEnv, p Provider) ([]*version.Version, error) {
	if !s.allows(p) {
		return nil, nil
	}
	return s.src.versions(ctx, env, p)
}

func (s *filteredSource) fetch(ctx context.Context, env *fetchEnv, p Provider, v *version.Version, platform string, dst *os.File) (fetched, error) {
	if !s.allows(p) {
		return fetched{}, fmt.Errorf("%w: %s does not offer %s", ErrNotFound, s, p)
	}
	return s.src.fetch(ctx, env, p, v, platform, dst)
}
