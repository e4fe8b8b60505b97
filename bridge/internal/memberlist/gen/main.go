// Command gen writes bridge/members.c, members.h and members_gen.go from
// struct ephpm_kv_ops in include/ephpm_kv.h. Run it as go generate ./bridge.
package main

import (
	"log"
	"os"

	"github.com/ephpm/ephpm/bridge/internal/memberlist"
)

func main() {
	header, err := os.ReadFile("../include/ephpm_kv.h")
	if err != nil {
		log.Fatal(err)
	}
	members, err := memberlist.Parse(header)
	if err != nil {
		log.Fatal(err)
	}
	for name, text := range map[string][]byte{
		"members.c":      memberlist.C(members),
		"members.h":      memberlist.H(members),
		"members_gen.go": memberlist.Go(members),
	} {
		if err := os.WriteFile(name, text, 0o644); err != nil {
			log.Fatal(err)
		}
	}
}
