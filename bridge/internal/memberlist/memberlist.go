// Package memberlist reads the members of the ops table from its one
// definition, struct ephpm_kv_ops in include/ephpm_kv.h, and writes all of
// the bridge's code that is per member: the provider's C wrappers (fork
// guard, NULL checks, the crossing into Go) and the table itself
// (members.c, members.h), the Go side of each member (exports_gen.go), the
// member numbers (members_gen.go) and the fuzz test's call of each member
// (invoke_gen.go).
//
// A parameter's checks follow from its declaration: a char pointer followed
// by a size_t is a buffer (NULL only when empty), any other pointer must not
// be NULL, and a pointer to a struct of the header (ephpm_kv_stats) must say
// its own struct_size. A member's Go side follows from the Go function it
// calls (exports.go): the Backend method of its name, else the function
// of package backend of its name that takes the backend first (a member
// that is one Step), or what Calls (calls.go) names.
package memberlist

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Member is one function pointer of struct ephpm_kv_ops.
type Member struct {
	Name   string
	Params []Param
}

// Param is one parameter of a member, as the header declares it.
type Param struct {
	Type string // e.g. "const char *", "size_t", "int64_t *"
	Name string
}

// InC names the members the provider implements in C, without entering
// its runtime (fork_guard.c defines ephpm_op_<name> for them).
var InC = map[string]bool{"last_error": true}

var (
	comments = regexp.MustCompile(`(?s)/\*.*?\*/`)
	body     = regexp.MustCompile(`(?s)typedef struct ephpm_kv_ops \{(.*?)\} ephpm_kv_ops;`)
	member   = regexp.MustCompile(`(?s)int\s*\(\*\s*(\w+)\)\s*\((.*?)\)\s*;`)
	param    = regexp.MustCompile(`^(.*?[\s*])(\w+)$`)
)

// Parse returns the members of struct ephpm_kv_ops in table order.
func Parse(header []byte) ([]Member, error) {
	m := body.FindSubmatch(comments.ReplaceAll(header, nil))
	if m == nil {
		return nil, fmt.Errorf("memberlist: no struct ephpm_kv_ops in the header")
	}
	var members []Member
	for _, mm := range member.FindAllSubmatch(m[1], -1) {
		mem := Member{Name: string(mm[1])}
		list := strings.Join(strings.Fields(string(mm[2])), " ")
		if list != "void" {
			for _, p := range strings.Split(list, ",") {
				pm := param.FindStringSubmatch(strings.TrimSpace(p))
				if pm == nil {
					return nil, fmt.Errorf("memberlist: %s: cannot read parameter %q", mem.Name, p)
				}
				typ := strings.TrimSpace(pm[1])
				if strings.HasSuffix(typ, "*") {
					typ = strings.TrimSpace(strings.TrimSuffix(typ, "*")) + " *"
				}
				mem.Params = append(mem.Params, Param{Type: typ, Name: pm[2]})
			}
		}
		members = append(members, mem)
	}
	if len(members) == 0 {
		return nil, fmt.Errorf("memberlist: struct ephpm_kv_ops has no members")
	}
	return members, nil
}

// GoExport is the name of the exported Go function a member crosses into:
// ephpmGo and the member's name in camel case (set_nx_wait: SetNXWait).
func GoExport(name string) string {
	var b strings.Builder
	b.WriteString("ephpmGo")
	for _, part := range strings.Split(name, "_") {
		switch part {
		case "nx", "pttl":
			b.WriteString(strings.ToUpper(part))
		default:
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

// Constant is a member's number as C and Go name it: EPHPM_MEMBER_SET_NX.
func Constant(name string) string { return "EPHPM_MEMBER_" + strings.ToUpper(name) }

func (p Param) decl() string {
	if strings.HasSuffix(p.Type, "*") {
		return p.Type + p.Name
	}
	return p.Type + " " + p.Name
}

// invalid is the C condition under which a member's arguments are refused.
func (m Member) invalid() string {
	var conds []string
	for i := 0; i < len(m.Params); i++ {
		p := m.Params[i]
		if !strings.HasSuffix(p.Type, "*") {
			continue
		}
		switch {
		case strings.HasSuffix(p.Type, "char *") && i+1 < len(m.Params) && m.Params[i+1].Type == "size_t":
			conds = append(conds, fmt.Sprintf("EPHPM_BAD_BUF(%s, %s)", p.Name, m.Params[i+1].Name))
			i++
		case strings.HasPrefix(p.Type, "ephpm_kv_"):
			conds = append(conds, fmt.Sprintf("%s == NULL || %s->struct_size < sizeof(uint32_t)", p.Name, p.Name))
		default:
			conds = append(conds, p.Name+" == NULL")
		}
	}
	return strings.Join(conds, "\n        || ")
}

// args is the argument list of the crossing: cgo declares every char
// pointer of an export as char *, so const ones are cast.
func (m Member) args() string {
	var a []string
	for _, p := range m.Params {
		if strings.HasPrefix(p.Type, "const char") {
			a = append(a, "(char *)"+p.Name)
		} else {
			a = append(a, p.Name)
		}
	}
	return strings.Join(a, ", ")
}

func (m Member) params() string {
	if len(m.Params) == 0 {
		return "void"
	}
	var d []string
	for _, p := range m.Params {
		d = append(d, p.decl())
	}
	return strings.Join(d, ", ")
}

// Marker is the first line of every file memberlist writes, the line by
// which Go's tools and reviewers know a generated file.
const Marker = "// Code generated by bridge/internal/memberlist from include/ephpm_kv.h. DO NOT EDIT."

// cMarker is Marker for a C file.
const cMarker = "/* Code generated by bridge/internal/memberlist from include/ephpm_kv.h. DO NOT EDIT. */"

const generated = "Edit struct ephpm_kv_ops in include/ephpm_kv.h and run go generate ./bridge."

// Generate returns every file memberlist writes, by its path in the
// bridge directory, from the tree at root (the module's directory).
func Generate(root string) (map[string][]byte, error) {
	header, err := os.ReadFile(filepath.Join(root, "include", "ephpm_kv.h"))
	if err != nil {
		return nil, err
	}
	members, err := Parse(header)
	if err != nil {
		return nil, err
	}
	module, err := modulePath(root)
	if err != nil {
		return nil, err
	}
	fs, err := ReadFuncs(filepath.Join(root, "backend"), module+"/backend", filepath.Join(root, "bridge"))
	if err != nil {
		return nil, err
	}
	exports, err := Exports(members, fs)
	if err != nil {
		return nil, err
	}
	invoke, err := Invoke(members)
	if err != nil {
		return nil, err
	}
	return map[string][]byte{
		"members.c":      C(members),
		"members.h":      H(members),
		"members_gen.go": Go(members),
		"exports_gen.go": exports,
		"invoke_gen.go":  invoke,
	}, nil
}

// modulePath is the module line of root's go.mod.
func modulePath(root string) (string, error) {
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(mod), "\n") {
		if path, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(path), `"`), nil
		}
	}
	return "", fmt.Errorf("memberlist: no module line in %s", filepath.Join(root, "go.mod"))
}

// C returns bridge/members.c: a wrapper per member and the table.
func C(members []Member) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\n\n/*\n * The provider's ops table and the wrapper of each member: the fork guard,\n * the NULL checks, then the crossing into Go (exports_gen.go).\n *\n * %s\n */\n", cMarker, generated)
	b.WriteString("#include <stdint.h>\n\n#include \"ephpm_kv.h\"\n#include \"members.h\"\n#include \"_cgo_export.h\"\n")
	for _, m := range members {
		if InC[m.Name] {
			continue
		}
		fmt.Fprintf(&b, "\n/* Crosses into Go: %s. */\nstatic int ephpm_op_%s(%s)\n{\n", GoExport(m.Name), m.Name, m.params())
		b.WriteString("    if (ephpm_forked_child) {\n        return EPHPM_KV_E_FORKED;\n    }\n")
		if cond := m.invalid(); cond != "" {
			fmt.Fprintf(&b, "    if (%s) {\n        return ephpm_reject_null(\"%s\");\n    }\n", cond, m.Name)
		}
		fmt.Fprintf(&b, "    return %s(%s);\n}\n", GoExport(m.Name), m.args())
	}
	b.WriteString("\nstatic const ephpm_kv_ops ephpm_ops = {\n")
	b.WriteString("    .abi_version = EPHPM_KV_ABI_VERSION,\n    .struct_size = sizeof(ephpm_kv_ops),\n")
	for _, m := range members {
		fmt.Fprintf(&b, "    .%s = ephpm_op_%s,\n", m.Name, m.Name)
	}
	b.WriteString("};\n\n/* The provider's one exported symbol. */\n")
	b.WriteString("__attribute__((visibility(\"default\"))) const ephpm_kv_ops *ephpm_kv_get_ops(void)\n{\n    return &ephpm_ops;\n}\n")
	return b.Bytes()
}

// H returns bridge/members.h: what members.c shares with fork_guard.c, and the
// member numbers.
func H(members []Member) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\n\n/*\n * Shared by fork_guard.c, members.c and invoke_gen.go.\n *\n * %s\n */\n", cMarker, generated)
	b.WriteString("#ifndef EPHPM_BRIDGE_MEMBERS_H\n#define EPHPM_BRIDGE_MEMBERS_H\n\n#include <signal.h>\n#include <stddef.h>\n#include <stdint.h>\n\n#include \"ephpm_kv.h\"\n\n")
	b.WriteString("/* Set in the child of every fork (fork_guard.c). */\nextern volatile sig_atomic_t ephpm_forked_child;\n\n")
	b.WriteString("/* A buffer may be NULL only when it is empty. */\n#define EPHPM_BAD_BUF(p, n) ((p) == NULL && (n) != 0)\n\n")
	b.WriteString("/* Records this thread's last_error message (fork_guard.c). */\nvoid ephpm_set_last_error(const char *msg, size_t len);\n\n")
	b.WriteString("/* Refuses a call of member whose pointer arguments break the header's\n * rule, saying so in last_error; returns E_INVALID (fork_guard.c). */\nint ephpm_reject_null(const char *member);\n")
	for _, m := range members {
		if InC[m.Name] {
			fmt.Fprintf(&b, "\n/* Implemented in C, in fork_guard.c: it does not enter Go. */\nint ephpm_op_%s(%s);\n", m.Name, m.params())
		}
	}
	b.WriteString("\n/* Each member's position in the table. */\n")
	for i, m := range members {
		fmt.Fprintf(&b, "#define %s %d\n", Constant(m.Name), i)
	}
	fmt.Fprintf(&b, "#define EPHPM_MEMBERS %d\n\n#endif /* EPHPM_BRIDGE_MEMBERS_H */\n", len(members))
	return b.Bytes()
}

// Go returns bridge/members_gen.go: the member numbers for Go code.
func Go(members []Member) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\n\npackage bridge\n\n", Marker)
	b.WriteString("// Each member's position in the table (members.h names the same numbers).\nconst (\n")
	for i, m := range members {
		if i == 0 {
			fmt.Fprintf(&b, "\tmember%s = iota\n", strings.TrimPrefix(GoExport(m.Name), "ephpmGo"))
		} else {
			fmt.Fprintf(&b, "\tmember%s\n", strings.TrimPrefix(GoExport(m.Name), "ephpmGo"))
		}
	}
	fmt.Fprintf(&b, ")\n\n// tableMembers is how many members the table has.\nconst tableMembers = %d\n", len(members))
	return b.Bytes()
}
