package memberlist

import (
	"bytes"
	"fmt"
	"go/format"
	"go/token"
	"go/types"
	"sort"
	"strings"
)

// An answer maps a Go function's results, and the member's output
// pointers, to its status. The export names the results (vars) and turns
// an error into its failure first; then the helper of answers.go, given
// the other results, says the status and writes the outputs through the
// outputs' constructor (out*), which runs before the arguments are read
// and sets what the pointers hold if the call does not answer them. A rule
// without vars hands the helper the results whole, error and all (done; a
// batch's stored count, written whether or not it failed). A member is
// answered by the first rule whose results and outputs are its own; a new
// shape of results needs a rule here and its helper there. The helpers are
// small enough for Go to inline: the export costs what the hand-written
// code did.
var answers = []struct {
	results string // the Go results, as written: "bool error"
	outputs string // the C outputs: "buffer" (buf, buf_cap, *len), else type and, for a fence, name
	out     string // the outputs' constructor, given them in the header's order
	vars    string // the names of the results before the error
	answer  string // the helper (a method of out's type when there is one)
}{
	{"error", "", "", "", "done"},
	{"bool error", "", "", "ok", "answer"},
	{"contract.SetNXOutcome error", "", "", "won", "inserted"},
	{"int64 error", "int64_t *fence", "outFence", "f", "answer"},
	{"int64 error", "int64_t *", "outInt64", "n", "answer"},
	{"contract.SetNXOutcome int64 error", "int64_t *fence", "outFence", "won, f", "granted"},
	{"time.Duration bool error", "int64_t *", "outTTL", "left, found", "answer"},
	{"int bool error", "buffer", "outBuffer", "n, found", "answer"},
	{"contract.SetNXOutcome int bool error", "buffer", "outBuffer", "won, n, found", "granted"},
	{"contract.SetNXOutcome int bool int64 error", "buffer int64_t *fence", "outFencedBuffer", "won, n, found, f", "granted"},
	{"contract.LockMode int error", "int32_t * int64_t *", "outHolders", "m, n", "answer"},
	{"int error", "buffer", "outRecords", "need", "answer"},
	{"int error", "size_t *", "outStored", "", "answer"},
	{"int uint64 error", "buffer uint64_t *", "outPage", "need, then", "answer"},
	{"stepAnswer error", "", "", "st", "stepped"},
}

// The kinds of a member's parameters, as the export reads them.
const (
	span   = iota // const char *p, size_t p_len: a key, a value or a token
	batch         // a span and size_t count: batch records
	buffer        // char *buf, size_t buf_cap, size_t *len: the caller's buffer
	scalar        // an integer
	pass          // a pointer to a struct of the header: passed on
	output        // any other pointer: written by the answer
)

type item struct {
	kind int
	p    []Param
}

// items groups a member's parameters by kind, in the header's order.
func (m Member) items() ([]item, error) {
	var its []item
	ps := m.Params
	for i := 0; i < len(ps); i++ {
		p := ps[i]
		next := func(k int, typ string) bool { return i+k < len(ps) && ps[i+k].Type == typ }
		switch {
		case p.Type == "const char *" && next(1, "size_t") && next(2, "size_t") && ps[i+2].Name == "count":
			its = append(its, item{batch, ps[i : i+3]})
			i += 2
		case p.Type == "const char *" && next(1, "size_t"):
			its = append(its, item{span, ps[i : i+2]})
			i++
		case p.Type == "char *" && next(1, "size_t") && next(2, "size_t *"):
			its = append(its, item{buffer, ps[i : i+3]})
			i += 2
		case strings.HasPrefix(p.Type, "ephpm_kv_") && strings.HasSuffix(p.Type, " *"):
			its = append(its, item{pass, ps[i : i+1]})
		case strings.HasSuffix(p.Type, "*"):
			if strings.Contains(p.Type, "char") {
				return nil, fmt.Errorf("memberlist: %s: %s %s is neither a span nor a buffer", m.Name, p.Type, p.Name)
			}
			its = append(its, item{output, ps[i : i+1]})
		default:
			its = append(its, item{scalar, ps[i : i+1]})
		}
	}
	return its, nil
}

// goName is a C parameter's name in a Go signature: camel case, and a
// trailing _ where it would shadow one of Go's own names (len).
func goName(c string) string {
	parts := strings.Split(c, "_")
	for i := 1; i < len(parts); i++ {
		parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
	}
	n := strings.Join(parts, "")
	if token.IsKeyword(n) || types.Universe.Lookup(n) != nil {
		n += "_"
	}
	return n
}

// goType is a C parameter's type as cgo names it.
func goType(c string) string {
	c = strings.TrimPrefix(c, "const ")
	if base, ok := strings.CutSuffix(c, " *"); ok {
		return "*C." + base
	}
	return "C." + c
}

// local is the name of a converted argument: the initials of a span's
// name (key: k, guard_token: gt), a duration's name without its unit
// (ttl_ms: ttl).
func local(it item) string {
	if it.kind == scalar {
		return goName(strings.TrimSuffix(it.p[0].Name, "_ms"))
	}
	var b strings.Builder
	for _, part := range strings.Split(it.p[0].Name, "_") {
		b.WriteByte(part[0])
	}
	return b.String()
}

// export writes member m's export, and adds the packages it names to
// imports.
func export(w *bytes.Buffer, m Member, fs Funcs, imports map[string]string) error {
	call := Calls[m.Name]
	name := call.Func
	if name == "" {
		name = strings.TrimPrefix(GoExport(m.Name), "ephpmGo")
	}
	fn, ok := fs.Backend[name]
	callee, first := "current()."+name, ""
	if !ok && call.Func == "" {
		if fn, ok = fs.Steps[name]; ok {
			callee, first = "backend."+name, "current()"
			imports["backend"] = fs.BackendPath
		}
	}
	if !ok {
		if fn, ok = fs.Bridge[name]; !ok {
			return fmt.Errorf("memberlist: %s: Backend has no method %s, nor package backend a function %s(b Stepper, ...): add one, or a row to Calls", m.Name, name, name)
		}
		callee = name
	}
	fail := func(format string, a ...any) error {
		return fmt.Errorf("memberlist: %s (%s%s): %s", m.Name, name, "("+joinParams(fn.Params)+")", fmt.Sprintf(format, a...))
	}
	its, err := m.items()
	if err != nil {
		return err
	}
	used := map[string]bool{"rc": true, "a": true, "err": true}
	for _, p := range m.Params {
		if used[goName(p.Name)] {
			return fail("parameter %s twice", goName(p.Name))
		}
		used[goName(p.Name)] = true
	}
	claim := func(n string) error {
		if used[n] {
			return fail("the Go name %s is taken: rename a parameter in the header", n)
		}
		used[n] = true
		return nil
	}
	qualify := func(typ string) {
		if pkg, _, ok := strings.Cut(strings.TrimLeft(typ, "*[]"), "."); ok && pkg != "C" {
			imports[pkg] = fn.imports[pkg]
		}
	}

	// The arguments: each input item is the Go parameter (or two) of its
	// place, converted by the parameter's type.
	var convs, later, callArgs, outs, pattern []string
	if first != "" {
		callArgs = append(callArgs, first)
	}
	var hasBatch, hasBuffer bool
	bufCap := ""
	gi := 0
	param := func() (GoParam, error) {
		if gi >= len(fn.Params) {
			return GoParam{}, fail("the header has more arguments than the Go function")
		}
		gi++
		return fn.Params[gi-1], nil
	}
	for _, it := range its {
		c := goName(it.p[0].Name)
		if it.kind == output {
			outs = append(outs, c)
			pat := it.p[0].Type
			if it.p[0].Name == "fence" {
				pat += "fence"
			}
			pattern = append(pattern, pat)
			continue
		}
		gp, err := param()
		if err != nil {
			return err
		}
		switch it.kind {
		case span:
			conv := map[string]string{"string": "key", "[]byte": "bytes"}[gp.Type]
			if conv == "" {
				return fail("%s is a span: its Go parameter %s must be a string (a key) or a []byte, not %s", it.p[0].Name, gp.Name, gp.Type)
			}
			l := local(it)
			if err := claim(l); err != nil {
				return err
			}
			convs = append(convs, fmt.Sprintf("%s := a.%s(%s, %s)", l, conv, c, goName(it.p[1].Name)))
			callArgs = append(callArgs, l)
		case batch:
			if gp.Type != "[]string" {
				return fail("%s is a batch: its Go parameter must be a []string, not %s", it.p[0].Name, gp.Type)
			}
			hasBatch = true
			read := "keyBatch"
			callArgs = append(callArgs, "batch.keys")
			if gi < len(fn.Params) && fn.Params[gi].Type == "[][]byte" {
				gi++
				read = "entryBatch"
				callArgs = append(callArgs, "batch.values")
			}
			later = append(later, fmt.Sprintf("a.%s(batch, %s, %s, %s)", read, c, goName(it.p[1].Name), goName(it.p[2].Name)))
		case buffer:
			if gp.Type != "[]byte" {
				return fail("%s is a buffer: its Go parameter must be a []byte, not %s", it.p[0].Name, gp.Type)
			}
			hasBuffer = true
			bufCap = goName(it.p[1].Name)
			callArgs = append(callArgs, fmt.Sprintf("view(%s, %s)", c, bufCap))
			outs = append(outs, goName(it.p[2].Name), bufCap)
			pattern = append(pattern, "buffer")
		case scalar:
			if gp.Type == "time.Duration" {
				l := local(it)
				if err := claim(l); err != nil {
					return err
				}
				convs = append(convs, fmt.Sprintf("%s := a.duration(%s)", l, c))
				callArgs = append(callArgs, l)
			} else {
				qualify(gp.Type)
				callArgs = append(callArgs, fmt.Sprintf("%s(%s)", gp.Type, c))
			}
		case pass:
			if gp.Type != goType(it.p[0].Type) {
				return fail("%s: its Go parameter must be a %s, not %s", it.p[0].Name, goType(it.p[0].Type), gp.Type)
			}
			callArgs = append(callArgs, c)
		}
	}
	if gi != len(fn.Params) {
		return fail("the Go function has more parameters than the header's arguments")
	}
	if hasBatch && hasBuffer {
		later = append(later, fmt.Sprintf("a.capacity(%s)", bufCap))
	}

	// The answer.
	results, outputs := strings.Join(fn.Results, " "), strings.Join(pattern, " ")
	ans, out, vars := "", "", ""
	for _, r := range answers {
		if r.results == results && r.outputs == outputs {
			ans, out, vars = r.answer, r.out, r.vars
			break
		}
	}
	if ans == "" {
		return fail("no answer for results (%s) with outputs [%s]: add a rule to answers and its helper to answers.go", results, outputs)
	}
	if call.Answer != "" {
		if out != "" {
			return fail("Calls names an answer for a member with outputs")
		}
		ans = call.Answer
	}
	for _, v := range strings.Split(vars, ", ") {
		if v != "" {
			if err := claim(v); err != nil {
				return err
			}
		}
	}
	if out != "" {
		if err := claim("out"); err != nil {
			return err
		}
	}
	if hasBatch {
		if err := claim("batch"); err != nil {
			return err
		}
	}

	var params []string
	for _, p := range m.Params {
		params = append(params, goName(p.Name)+" "+goType(p.Type))
	}
	export := GoExport(m.Name)
	fmt.Fprintf(w, "\n// %s is %s's Go side: %s.\n//\n//export %s\n", export, m.Name, callee, export)
	fmt.Fprintf(w, "func %s(%s) (rc C.int) {\n\trc = unanswered\n\tdefer recoverStatus(&rc)\n", export, strings.Join(params, ", "))
	if out != "" {
		fmt.Fprintf(w, "\tout := %s(%s)\n", out, strings.Join(outs, ", "))
		ans = "out." + ans
	}
	if hasBatch {
		w.WriteString("\tbatch := batchLists.Get().(*batchList)\n\tdefer batch.done()\n")
	}
	if len(convs)+len(later) > 0 {
		w.WriteString("\tvar a args\n")
		for _, s := range append(convs, later...) {
			fmt.Fprintf(w, "\t%s\n", s)
		}
		w.WriteString("\tif a.err != nil {\n\t\treturn failure(a.err)\n\t}\n")
	}
	called := fmt.Sprintf("%s(%s)", callee, strings.Join(callArgs, ", "))
	if vars == "" {
		fmt.Fprintf(w, "\treturn %s(%s)\n}\n", ans, called)
		return nil
	}
	fmt.Fprintf(w, "\t%s, err := %s\n\tif err != nil {\n\t\treturn failure(err)\n\t}\n\treturn %s(%s)\n}\n", vars, called, ans, vars)
	return nil
}

func joinParams(ps []GoParam) string {
	var s []string
	for _, p := range ps {
		s = append(s, p.Name+" "+p.Type)
	}
	return strings.Join(s, ", ")
}

const exportsDoc = `// The Go side of each member of the ops table: members.c's wrapper of a
// member crosses into the export of its name here, after the fork guard
// and the NULL checks. Each export is derived, not written:
//
//   - It calls the Backend method named after the member (set_nx: SetNX),
//     on the backend the table serves, or, where Backend has none, the
//     function of package backend of that name with that backend first
//     (set_guarded: backend.SetGuarded, one Step; backend/step.go),
//     unless memberlist's Calls table
//     (bridge/internal/memberlist/calls.go) names another function: the
//     members that are not one Backend call (the waiting members,
//     configure, stats, begin_request; composed.go).
//   - The header's arguments, in order, are that function's parameters,
//     converted by the Go parameter's type (args.go): a string
//     is a key (1..MaxKeyLen bytes), a []byte a value or token, a
//     time.Duration milliseconds (0..MaxTTL), any other integer type a
//     conversion; the caller's buffer (char *buf, size_t buf_cap, size_t
//     *len) is a []byte to copy into, and batch records (pointer, length,
//     count) a []string of keys, or keys and a [][]byte of values. The
//     first argument refused is the one last_error names.
//   - The status, and what the output pointers hold, follow from the
//     function's results and those pointers by memberlist's answer rules
//     (exports.go), through the answers and outputs of answers.go.
//
// Rules rather than a table row per member, so that the common member (one
// Backend method) costs no file beyond the header and the method; the
// table holds only the members whose Go side cannot be derived, and a
// member whose results take a new shape adds an answer rule. Every export
// is direct code, as the hand-written ones were: no reflection, nothing
// allocated per call, the answer helpers inlined.
`

// Exports returns bridge/exports_gen.go: the export of every member that
// crosses into Go.
func Exports(members []Member, fs Funcs) ([]byte, error) {
	var body bytes.Buffer
	imports := map[string]string{}
	for _, m := range members {
		if InC[m.Name] {
			continue
		}
		if err := export(&body, m, fs, imports); err != nil {
			return nil, err
		}
	}
	for name := range Calls {
		if !hasMember(members, name) {
			return nil, fmt.Errorf("memberlist: Calls names %s, which the header has no member of", name)
		}
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\n\n%s\npackage bridge\n\n", Marker, exportsDoc)
	b.WriteString("/*\n#cgo CFLAGS: -I${SRCDIR}/../include\n#include \"ephpm_kv.h\"\n*/\nimport \"C\"\n")
	if len(imports) > 0 {
		var paths []string
		for _, p := range imports {
			paths = append(paths, fmt.Sprintf("%q", p))
		}
		sort.Strings(paths)
		fmt.Fprintf(&b, "\nimport (\n\t%s\n)\n", strings.Join(paths, "\n\t"))
	}
	b.Write(body.Bytes())
	return format.Source(b.Bytes())
}

func hasMember(members []Member, name string) bool {
	for _, m := range members {
		if m.Name == name {
			return true
		}
	}
	return false
}
