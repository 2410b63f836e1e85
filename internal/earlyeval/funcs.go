package earlyeval

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"

	"github.com/tfisolate/tfisolate/internal/modtree"
)

// Functions returns the functions ModuleSources gives an expression under
// rules r: those the engine has when it evaluates a module source at
// init, each one computing exactly what the engine's does, under its
// name and its "core::" name (both engines have both); nil when r
// evaluates nothing. This is the one place that decides it.
//
// Both engines' init-time tables (Terraform 1.15 and 1.16, OpenTofu 1.10
// and 1.12, read in their internal/lang/functions.go) take most pure
// string, collection and encoding functions straight from go-cty's
// stdlib, and so do we, for those whose go-cty behaviour is the same in
// every go-cty release those engines build with (1.16.3 to 1.18.1) and
// ours (TestFunctionsLikeEngine checks each against the engine).
// Left out, and so never evaluated here (a source that calls one is left
// to the engine): every impure function (timestamp, plantimestamp, uuid,
// bcrypt), every filesystem function (fileset, templatefile, ...: they
// read the directory the engine runs in) but file, which ModuleSources
// adds for a path inside that directory (fileFunc), try and can (they turn an
// error into a value: what does not evaluate here must never become a
// fallback value the engine would not choose), contains and merge (go-cty 1.18.1
// changed their null handling), the functions the engines implement
// themselves but for the three below, and the ones only one engine has
// (convert; urldecode, cidrcontains, base64gunzip).
func Functions(r Rules) map[string]function.Function {
	switch r.Eval {
	case EvalConst, EvalStatic:
		return initFunctions()
	}
	return nil
}

// initFunctions is the table both evaluating engines share (see
// Functions), built once; callers never change it.
var initFunctions = sync.OnceValue(func() map[string]function.Function {
	base := map[string]function.Function{
		"abs": stdlib.AbsoluteFunc, "ceil": stdlib.CeilFunc, "chomp": stdlib.ChompFunc,
		"chunklist": stdlib.ChunklistFunc, "coalescelist": stdlib.CoalesceListFunc,
		"compact": stdlib.CompactFunc, "concat": stdlib.ConcatFunc, "csvdecode": stdlib.CSVDecodeFunc,
		"distinct": stdlib.DistinctFunc, "element": stdlib.ElementFunc, "flatten": stdlib.FlattenFunc,
		"floor": stdlib.FloorFunc, "format": stdlib.FormatFunc, "formatdate": stdlib.FormatDateFunc,
		"formatlist": stdlib.FormatListFunc, "indent": stdlib.IndentFunc, "join": stdlib.JoinFunc,
		"jsondecode": stdlib.JSONDecodeFunc, "jsonencode": stdlib.JSONEncodeFunc, "keys": stdlib.KeysFunc,
		"log": stdlib.LogFunc, "lower": stdlib.LowerFunc, "max": stdlib.MaxFunc, "min": stdlib.MinFunc,
		"parseint": stdlib.ParseIntFunc, "pow": stdlib.PowFunc, "range": stdlib.RangeFunc,
		"regex": stdlib.RegexFunc, "regexall": stdlib.RegexAllFunc, "reverse": stdlib.ReverseListFunc,
		"setintersection": stdlib.SetIntersectionFunc, "setproduct": stdlib.SetProductFunc,
		"setsubtract": stdlib.SetSubtractFunc, "setunion": stdlib.SetUnionFunc, "signum": stdlib.SignumFunc,
		"slice": stdlib.SliceFunc, "sort": stdlib.SortFunc, "split": stdlib.SplitFunc,
		"strrev": stdlib.ReverseFunc, "substr": stdlib.SubstrFunc, "timeadd": stdlib.TimeAddFunc,
		"title": stdlib.TitleFunc, "trim": stdlib.TrimFunc, "trimprefix": stdlib.TrimPrefixFunc,
		"trimspace": stdlib.TrimSpaceFunc, "trimsuffix": stdlib.TrimSuffixFunc, "upper": stdlib.UpperFunc,
		"values": stdlib.ValuesFunc, "zipmap": stdlib.ZipmapFunc,
		"replace": replaceFunc, "lookup": lookupFunc, "coalesce": coalesceFunc,
	}
	out := make(map[string]function.Function, 2*len(base))
	for n, f := range base {
		out[n] = f
		out["core::"+n] = f
	}
	return out
})

// The three functions below are the engines' own (their lang/funcs), not
// go-cty's: go-cty's replace has no regular-expression form and its
// coalesce keeps an empty string, so they are written here, to the
// engines' documented behaviour, for known, unmarked arguments only (the
// only ones ModuleSources has). Where the engine's result is not plainly
// determined they return an error, which leaves the source to the engine.

// replaceFunc is replace(str, substr, replacement): every occurrence of
// substr, or, when substr is wrapped in slashes, of the regular expression
// between them (with $1-style references in replacement).
var replaceFunc = function.New(&function.Spec{
	Params: []function.Parameter{
		{Name: "str", Type: cty.String},
		{Name: "substr", Type: cty.String},
		{Name: "replace", Type: cty.String},
	},
	Type: function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		str, substr, repl := args[0].AsString(), args[1].AsString(), args[2].AsString()
		if len(substr) > 1 && strings.HasPrefix(substr, "/") && strings.HasSuffix(substr, "/") {
			re, err := regexp.Compile(substr[1 : len(substr)-1])
			if err != nil {
				return cty.UnknownVal(cty.String), err
			}
			return cty.StringVal(re.ReplaceAllString(str, repl)), nil
		}
		return cty.StringVal(strings.ReplaceAll(str, substr, repl)), nil
	},
})

// lookupFunc is lookup(map, key[, default]): the map's element or the
// object's attribute key, else default (converted to the map's element
// type), else an error.
var lookupFunc = function.New(&function.Spec{
	Params: []function.Parameter{
		{Name: "inputMap", Type: cty.DynamicPseudoType},
		{Name: "key", Type: cty.String},
	},
	VarParam: &function.Parameter{Name: "default", Type: cty.DynamicPseudoType, AllowNull: true, AllowDynamicType: true},
	Type: func(args []cty.Value) (cty.Type, error) {
		if len(args) > 3 {
			return cty.NilType, fmt.Errorf("lookup() takes two or three arguments, got %d", len(args))
		}
		if !args[1].IsKnown() {
			return cty.DynamicPseudoType, nil // the call is then unknown: never evaluated
		}
		ty, key := args[0].Type(), args[1].AsString()
		switch {
		case ty.IsObjectType() && ty.HasAttribute(key):
			return ty.AttributeType(key), nil
		case ty.IsObjectType() && len(args) == 3:
			return args[2].Type(), nil
		case ty.IsMapType():
			return ty.ElementType(), nil
		}
		return cty.NilType, errors.New("lookup() is evaluated here only on a map, or an object with the key or a default")
	},
	Impl: func(args []cty.Value, ret cty.Type) (cty.Value, error) {
		m, key := args[0], args[1].AsString()
		if m.IsNull() {
			return cty.NilVal, errors.New("lookup() of null")
		}
		if m.Type().IsObjectType() {
			if m.Type().HasAttribute(key) {
				return m.GetAttr(key), nil
			}
		} else if m.HasIndex(cty.StringVal(key)).True() {
			return m.Index(cty.StringVal(key)), nil
		}
		if len(args) == 3 {
			return convert.Convert(args[2], ret)
		}
		return cty.NilVal, fmt.Errorf("lookup failed to find key %q", key)
	},
})

// coalesceFunc is coalesce(vals...): the first argument that is neither
// null nor (when the arguments unify to string) the empty string,
// converted to the type they unify to.
var coalesceFunc = function.New(&function.Spec{
	VarParam: &function.Parameter{Name: "vals", Type: cty.DynamicPseudoType, AllowNull: true, AllowDynamicType: true},
	Type: func(args []cty.Value) (cty.Type, error) {
		types := make([]cty.Type, len(args))
		for i, a := range args {
			types[i] = a.Type()
		}
		ty, _ := convert.UnifyUnsafe(types)
		if ty == cty.NilType {
			return cty.NilType, errors.New("all arguments must have the same type")
		}
		return ty, nil
	},
	Impl: func(args []cty.Value, ret cty.Type) (cty.Value, error) {
		for _, a := range args {
			v, err := convert.Convert(a, ret)
			if err != nil {
				return cty.NilVal, err
			}
			if v.IsNull() || (ret == cty.String && v.RawEquals(cty.StringVal(""))) {
				continue
			}
			return v, nil
		}
		return cty.NilVal, errors.New("no non-null, non-empty-string arguments")
	},
})

// fileFunc is file(path) as the engine has it at init, for a path inside
// the directory the engine runs in (dir; generated files in overlay, by
// slash path, read first, as the workdir holds them): the file's text,
// which must be UTF-8. Any other path is an error, never a guess: an
// absolute one, one leaving dir, one starting with "~" (the engine
// expands it to a home directory), one under .terraform, .git or
// terraform.tfstate.d (the workdir does not copy those), one that is not
// a regular file.
func fileFunc(dir string, overlay map[string][]byte) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			p := args[0].AsString()
			if strings.HasPrefix(p, "~") || !filepath.IsLocal(p) {
				return cty.NilVal, fmt.Errorf("file(%q) is evaluated here only inside the directory the engine runs in", p)
			}
			rel := filepath.ToSlash(filepath.Clean(p))
			for _, el := range strings.Split(rel, "/") {
				if el == ".terraform" || el == ".git" || el == "terraform.tfstate.d" {
					return cty.NilVal, fmt.Errorf("file(%q) reads a directory the workdir does not copy", p)
				}
			}
			b, ok := overlay[rel]
			if !ok {
				var err error
				if b, err = modtree.ReadRegular(filepath.Join(dir, rel)); err != nil {
					return cty.NilVal, err
				}
			}
			if !utf8.Valid(b) {
				return cty.NilVal, fmt.Errorf("file(%q) is not UTF-8", p)
			}
			return cty.StringVal(string(b)), nil
		},
	})
}

// engineOnly are, by rule, the functions the engine has at init (in any
// release that evaluates sources: Terraform 1.15 and 1.16; OpenTofu 1.10
// and 1.12, read in their lang/functions.go) that Functions does not
// evaluate here. SourceDirs gives them as stubs whose result is unknown,
// so that a source calling one still shows its known prefix; listing one
// the engine lacks costs only a directory materialized for a source the
// engine then refuses.
var engineOnly = map[Evaluation][]string{
	EvalConst: append(strings.Fields(`abspath alltrue anytrue base64decode base64encode base64gzip
		base64sha256 base64sha512 basename bcrypt can cidrhost cidrnetmask cidrsubnet cidrsubnets
		contains convert dirname endswith ephemeralasnull`), commonEngineOnly...),
	EvalStatic: append(strings.Fields(`abspath alltrue anytrue base64decode base64encode base64gunzip
		base64gzip base64sha256 base64sha512 basename bcrypt can cidrcontains cidrhost cidrnetmask
		cidrsubnet cidrsubnets contains dirname endswith ephemeralasnull urldecode`), commonEngineOnly...),
}

// commonEngineOnly are the rest of engineOnly, the same in both engines.
var commonEngineOnly = strings.Fields(`file filebase64 filebase64sha256 filebase64sha512 fileexists
	filemd5 fileset filesha1 filesha256 filesha512 index issensitive length list map matchkeys md5
	merge nonsensitive one pathexpand plantimestamp rsadecrypt sensitive sha1 sha256 sha512
	startswith strcontains sum templatefile templatestring textdecodebase64 textencodebase64 timecmp
	timestamp tobool tolist tomap tonumber toset tostring transpose try urlencode uuid uuidv5
	yamldecode yamlencode`)

// unknownFunc is the stub of a function not evaluated here: any
// arguments, an unknown result.
var unknownFunc = function.New(&function.Spec{
	VarParam: &function.Parameter{Name: "args", Type: cty.DynamicPseudoType,
		AllowUnknown: true, AllowNull: true, AllowDynamicType: true, AllowMarked: true},
	Type: function.StaticReturnType(cty.DynamicPseudoType),
	Impl: func([]cty.Value, cty.Type) (cty.Value, error) { return cty.DynamicVal, nil },
})

// withStubs returns Functions(r) and, for each of engineOnly[r.Eval]
// (under its core:: name too), unknownFunc.
func withStubs(r Rules) map[string]function.Function {
	out := maps.Clone(Functions(r))
	for _, n := range engineOnly[r.Eval] {
		out[n], out["core::"+n] = unknownFunc, unknownFunc
	}
	return out
}
