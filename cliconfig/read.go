package cliconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/hcl"
	"github.com/hashicorp/hcl/hcl/ast"
	hclparser "github.com/hashicorp/hcl/hcl/parser"
	hclscanner "github.com/hashicorp/hcl/hcl/scanner"
	hcltoken "github.com/hashicorp/hcl/hcl/token"
	tfaddr "github.com/hashicorp/terraform-registry-address"
	svchost "github.com/hashicorp/terraform-svchost"
)

// cliSettingKeys are the top-level settings File models. HCL 1's
// decoder matches setting names case-insensitively, as Terraform reads
// them; provider_installation is decoded by name, exactly as Terraform does.
var cliSettingKeys = []string{"credentials", "credentials_helper", "host", "disable_checkpoint",
	"disable_checkpoint_signature", "plugin_cache_dir"}

// Read reads a Terraform CLI configuration file (the file that
// TF_CLI_CONFIG_FILE names, ~/.terraformrc, or a *.tfrc / *.tfrc.json file
// in Terraform's config directory). Like Terraform it reads HCL 1 native
// syntax, or JSON when the first non-space character is "{". A file that
// cannot be read is an error wrapping the os error; a file Terraform would
// refuse (bad syntax, a misshapen block, an invalid host name, two
// provider_installation blocks, an unknown installation method, a bad
// include or exclude pattern) is a *Error naming the file and
// the line, wrapping ErrInvalid.
func Read(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read CLI config: %w", err)
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return Parse(path, b)
}

// cliParser holds what parsing one file needs to name lines.
type cliParser struct {
	path  string
	json  bool
	jsonL map[string][]int // JSON key path -> line of each occurrence
	seen  map[string]int   // occurrences of a JSON key path handed out so far
}

func (p *cliParser) errorf(line int, format string, args ...any) error {
	return &Error{Path: p.path, Line: line, Msg: fmt.Sprintf(format, args...)}
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

// Parse reads src as the CLI configuration file at path (which names the
// file in errors and in File.Path; it is not read), by the rules of Read.
func Parse(path string, src []byte) (*File, error) {
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
	f := &File{Path: path}

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
				return nil, p.errorf(lines[i], "a second provider_installation block (the first is on line %d); Terraform allows only one", f.ProviderInstallation.Line)
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
	pi := &ProviderInstallation{Path: p.path, Line: line}
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
	m := InstallMethod{Kind: kind, Include: content.Include, Exclude: content.Exclude, Path: p.path, Line: line}
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
		if _, err := ParsePattern(pat, ""); err != nil {
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

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
