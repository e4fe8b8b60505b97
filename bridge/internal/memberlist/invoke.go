package memberlist

import (
	"bytes"
	"fmt"
	"go/format"
	"strings"
)

// invokeArgs is the argument list call_member passes member m: spans take
// the fuzzer's key and value in turn, integers its number, outputs
// call_member's own.
func (m Member) invokeArgs() (string, error) {
	its, err := m.items()
	if err != nil {
		return "", err
	}
	var a []string
	spans := 0
	for _, it := range its {
		switch it.kind {
		case span, batch:
			if spans%2 == 0 {
				a = append(a, "k", "kl")
			} else {
				a = append(a, "v", "vl")
			}
			spans++
			if it.kind == batch {
				a = append(a, "(size_t)ttl")
			}
		case buffer:
			a = append(a, "buf", "cap", "len")
		case pass:
			arg, ok := map[string]string{"ephpm_kv_stats *": "&st", "ephpm_kv_step *": "&sp"}[it.p[0].Type]
			if !ok {
				return "", fmt.Errorf("memberlist: %s: call_member has no struct for %s %s", m.Name, it.p[0].Type, it.p[0].Name)
			}
			a = append(a, arg)
		case scalar, output:
			arg, ok := map[string]string{
				"int64_t": "ttl", "int32_t": "(int32_t)(ttl & 1)", "size_t": "(size_t)ttl",
				"uint64_t": "(uint64_t)ttl", "int64_t *": "num", "int32_t *": "&mode", "size_t *": "len",
				"uint64_t *": "(uint64_t *)num",
			}[it.p[0].Type]
			if !ok {
				return "", fmt.Errorf("memberlist: %s: call_member has no argument for %s %s", m.Name, it.p[0].Type, it.p[0].Name)
			}
			a = append(a, arg)
		}
	}
	return strings.Join(a, ", "), nil
}

// Invoke returns bridge/invoke_gen.go: call_member, which calls any
// member through the table as a C consumer would, for the fuzz test
// (invoke.go).
func Invoke(members []Member) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\n\n//go:build ephpmtest\n\n", Marker)
	b.WriteString("// call_member calls each member of the table, by its number, as a C\n// consumer would, for the fuzz test (invoke.go); the ephpmtest build tag\n// keeps it out of libephpm.so.\n\npackage bridge\n\n")
	b.WriteString("/*\n#cgo CFLAGS: -I${SRCDIR}/../include\n#include \"ephpm_kv.h\"\n#include \"members.h\"\n\n")
	b.WriteString("// Calls member op through this package's own table: the fork guard, the\n// NULL checks and the crossing back into Go all run. Spans take k and v\n// in turn, integers ttl, the buffer buf; *len and *num are what the\n// member writes.\n")
	b.WriteString("int call_member(int op, const char *k, size_t kl, const char *v, size_t vl,\n                int64_t ttl, char *buf, size_t cap, size_t *len, int64_t *num)\n{\n")
	b.WriteString("    const ephpm_kv_ops *o = ephpm_kv_get_ops();\n    ephpm_kv_stats st = {.struct_size = sizeof st};\n    int32_t mode;\n")
	// A step's parts come from ttl's bits, its spans from k and v; it
	// never waits.
	b.WriteString("    ephpm_kv_step sp = {.struct_size = sizeof sp, .flags = (uint32_t)(ttl & 15),\n" +
		"        .guard = (int32_t)((ttl >> 4) & 3), .action = (int32_t)((ttl >> 6) % 5),\n" +
		"        .lock = k, .lock_len = kl, .token = v, .token_len = vl, .lock_ttl_ms = ttl, .fence = ttl,\n" +
		"        .key = v, .key_len = vl, .value = v, .value_len = vl, .ttl_ms = ttl, .buf = buf, .buf_cap = cap};\n")
	b.WriteString("    (void)st;\n    (void)sp;\n    (void)mode;\n    switch (op) {\n")
	var fills, keyed []string
	for _, m := range members {
		args, err := m.invokeArgs()
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "    case %s:\n        return o->%s(%s);\n", Constant(m.Name), m.Name, args)
		name := "member" + strings.TrimPrefix(GoExport(m.Name), "ephpmGo")
		if strings.Contains(args, "buf, cap, len") {
			fills = append(fills, name)
		}
		if strings.HasPrefix(args, "k, kl") {
			keyed = append(keyed, name)
		}
	}
	b.WriteString("    }\n    return -100;\n}\n*/\nimport \"C\"\n\n")
	fmt.Fprintf(&b, "// fillsBuffer reports whether member op copies what it answers into the\n// caller's buffer.\nfunc fillsBuffer(op int) bool {\n\tswitch op {\n\tcase %s:\n\t\treturn true\n\t}\n\treturn false\n}\n", strings.Join(fills, ", "))
	fmt.Fprintf(&b, "\n// takesKey reports whether call_member passes member op its key (k, kl),\n// which the member must refuse when NULL and not empty.\nfunc takesKey(op int) bool {\n\tswitch op {\n\tcase %s:\n\t\treturn true\n\t}\n\treturn false\n}\n", strings.Join(keyed, ",\n\t\t"))
	return format.Source(b.Bytes())
}
