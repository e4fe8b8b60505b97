// Command embedhost is a Go web server that embeds PHP: each HTTP request
// runs a PHP script from the docroot, and the PHP scripts' ephpm_kv_*
// calls and sessions use the same store that the host's Go code reads and
// writes. The host links the bridge into its own runtime and exports the
// ops table; the extension finds it there and loads no second Go runtime.
//
//	cd examples/embedhost && CGO_CFLAGS="$(php-config --includes)" CGO_LDFLAGS="-lphp$(php-config --version | cut -d. -f1,2)" \
//	    go run . -ext ../../build/modules/ephpm.so -addr 127.0.0.1:8132
//
// It is a module of its own, so that go test ./... in the repository's root
// needs no PHP headers; PHP's include paths and library come from php-config
// (CMake passes them to its test).
//
// Beside the PHP scripts it serves /go/get?key=K and /go/set?key=K&value=V,
// answered by Go straight from the store. PHP here is NTS, so scripts run
// one at a time, on one thread.
package main

/*
#cgo LDFLAGS: -rdynamic
#include <stdlib.h>
int host_php_start(const char *ini_path);
int host_php_run(const char *path, const char *query, const char *cookie);
*/
import "C"

import (
	"bytes"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"unsafe"

	"github.com/ephpm/ephpm/bridge"
)

// out collects the response body of the script running now.
var out bytes.Buffer

//export hostWrite
func hostWrite(p *C.char, n C.size_t) {
	out.Write(unsafe.Slice((*byte)(unsafe.Pointer(p)), int(n)))
}

type job struct {
	path, query, cookie string
	done                chan []byte
}

// Host owns the PHP engine: one goroutine, locked to one OS thread, runs
// every script.
type Host struct {
	docroot string
	jobs    chan job
}

// Start starts PHP with the extension at ext and extra ini lines.
func Start(ext, docroot string, ini ...string) (*Host, error) {
	h := &Host{docroot: docroot, jobs: make(chan job)}
	started := make(chan error)
	go func() {
		runtime.LockOSThread() // PHP is not thread-safe: it stays on this thread
		lines := append([]string{"extension=" + ext}, ini...)
		f, err := os.CreateTemp("", "embedhost-*.ini")
		if err == nil {
			_, err = f.WriteString(strings.Join(lines, "\n") + "\n")
			f.Close()
		}
		if err != nil {
			started <- err
			return
		}
		defer os.Remove(f.Name())
		cini := C.CString(f.Name())
		defer C.free(unsafe.Pointer(cini))
		if C.host_php_start(cini) != 0 {
			started <- fmt.Errorf("PHP did not start")
			return
		}
		started <- nil
		for j := range h.jobs {
			out.Reset()
			cp, cq, cc := C.CString(j.path), C.CString(j.query), C.CString(j.cookie)
			C.host_php_run(cp, cq, cc)
			C.free(unsafe.Pointer(cp))
			C.free(unsafe.Pointer(cq))
			C.free(unsafe.Pointer(cc))
			j.done <- bytes.Clone(out.Bytes())
		}
	}()
	return h, <-started
}

// ServeHTTP runs the script the path names, or answers /go/ from the store.
func (h *Host) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	switch r.URL.Path {
	case "/go/get":
		v, ok := bridge.Store().Get(q.Get("key"))
		if !ok {
			http.Error(w, "no such key", http.StatusNotFound)
			return
		}
		w.Write(v)
		return
	case "/go/set":
		if err := bridge.Store().Set(q.Get("key"), []byte(q.Get("value")), 0); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		return
	}
	path := filepath.Join(h.docroot, filepath.Clean("/"+r.URL.Path))
	if !strings.HasSuffix(path, ".php") {
		path = filepath.Join(path, "index.php")
	}
	if _, err := os.Stat(path); err != nil {
		http.NotFound(w, r)
		return
	}
	j := job{path: path, query: r.URL.RawQuery, cookie: r.Header.Get("Cookie"), done: make(chan []byte)}
	h.jobs <- j
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write(<-j.done)
}

func main() {
	ext := flag.String("ext", "build/modules/ephpm.so", "the built ephpm.so")
	docroot := flag.String("docroot", "examples/embedhost/www", "where the PHP scripts are")
	addr := flag.String("addr", "127.0.0.1:8132", "listen address")
	flag.Parse()
	h, err := Start(*ext, *docroot, "session.save_handler=ephpm", "session.use_cookies=0")
	if err != nil {
		log.Fatal(err)
	}
	// Something the PHP side can read: the host wrote it, in Go.
	bridge.Store().Set("host:greeting", []byte("hello from the Go host"), 0)
	log.Printf("embedhost on http://%s/ (docroot %s)", *addr, *docroot)
	log.Fatal(http.ListenAndServe(*addr, h))
}
