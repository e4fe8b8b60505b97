// Command gen writes include/ephpm_session.h from package sessionkeys
// (header.Generate). Run it as go generate ./sessionkeys.
package main

import (
	"log"
	"os"
	"path/filepath"

	"github.com/ephpm/ephpm/sessionkeys/internal/header"
)

func main() {
	text, err := header.Generate()
	if err != nil {
		log.Fatal(err)
	}
	// go generate runs this in sessionkeys/.
	if err := os.WriteFile(filepath.Join("..", header.Path), text, 0o644); err != nil {
		log.Fatal(err)
	}
}
