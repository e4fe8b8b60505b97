// Command libephpm is the c-shared packaging of the bridge: built with
//
//	go build -buildmode=c-shared -o libephpm.so ./cmd/libephpm
//
// (plus the linker flags in CMakeLists.txt that keep ephpm_kv_get_ops the
// only exported symbol), it is the library the PHP extension loads.
package main

import _ "github.com/ephpm/ephpm/bridge"

func main() {}
