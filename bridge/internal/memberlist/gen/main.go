// Command gen writes the bridge's generated files (memberlist.Generate)
// from struct ephpm_kv_ops in include/ephpm_kv.h and the Go functions its
// members call. Run it as go generate ./bridge.
package main

import (
	"log"
	"os"

	"github.com/ephpm/ephpm/bridge/internal/memberlist"
)

func main() {
	files, err := memberlist.Generate("..")
	if err != nil {
		log.Fatal(err)
	}
	for name, text := range files {
		if err := os.WriteFile(name, text, 0o644); err != nil {
			log.Fatal(err)
		}
	}
}
