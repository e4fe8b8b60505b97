package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/bridge"
)

var (
	startOnce sync.Once
	host      *Host
	startErr  error
)

// server starts PHP once per test binary (the embed SAPI starts once per
// process) and serves the host over httptest.
func server(t *testing.T) *httptest.Server {
	ext := os.Getenv("EPHPM_SO")
	if ext == "" {
		t.Skip("EPHPM_SO is not set (ctest sets it to the built ephpm.so)")
	}
	startOnce.Do(func() {
		// A session lock wait of 600 s: a hang catch, not a speed bound.
		host, startErr = Start(ext, "www", "session.save_handler=ephpm", "session.use_cookies=0", "ephpm.session_lock_wait=600")
	})
	require.NoError(t, startErr)
	srv := httptest.NewServer(host)
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, url string) string {
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(body)
}

func TestPHPUsesTheHostsTableAndStore(t *testing.T) {
	srv := server(t)
	require.NoError(t, bridge.Store().Set("host:greeting", []byte("hello from Go"), 0))
	body := get(t, srv.URL+"/")
	assert.Contains(t, body, "greeting from the host: hello from Go")
	assert.Contains(t, body, "library: (provided by the host process)")

	// What PHP wrote, Go reads.
	before, _ := bridge.Store().Get("php:requests")
	get(t, srv.URL+"/")
	after, ok := bridge.Store().Get("php:requests")
	require.True(t, ok)
	assert.NotEqual(t, string(before), string(after))

	// One Go runtime: the library was never loaded into this process.
	maps, err := os.ReadFile("/proc/self/maps")
	require.NoError(t, err)
	assert.NotContains(t, string(maps), "libephpm.so")
}

func TestLocksAndSessionsInTheHostsStore(t *testing.T) {
	srv := server(t)
	assert.Equal(t, strings.Join([]string{
		"A acquires (1s TTL):     true",
		"B acquires (30s TTL):    true",
		"A releases with del_if_eq: false",
		"C tries to acquire:      false",
		"lock holder now:         'B'",
		"",
	}, "\n"), get(t, srv.URL+"/lock.php?release=del_if_eq"))

	body := get(t, srv.URL+"/session.php?sid=hosttest")
	assert.Contains(t, body, "visits: 1")
	assert.Contains(t, body, "lock held while running: yes")
	data, ok := bridge.Store().Get("session:hosttest")
	require.True(t, ok, "the session is in the host's store")
	assert.Equal(t, "visits|i:1;", string(data))
	assert.False(t, bridge.Store().Exists("session_lock:hosttest"), "released after the request")

	// Go holds the session's lock: the PHP request waits until Go releases
	// it, then takes it.
	_, err := bridge.Store().SetNX("session_lock:hosttest", []byte("go-holds-it"), 0)
	require.NoError(t, err)
	released := make(chan time.Time, 1)
	go func() {
		time.Sleep(300 * time.Millisecond)
		released <- time.Now()
		bridge.Store().DelIfEq("session_lock:hosttest", []byte("go-holds-it"))
	}()
	body = get(t, srv.URL+"/session.php?sid=hosttest")
	// The release let PHP go on, long before its 600 s wait would have
	// ended (the lock has no TTL); how soon the host ran it is not asserted
	// (300 s is a hang catch).
	assert.Less(t, time.Since(<-released), 300*time.Second, "PHP went on after the release")
	assert.Contains(t, body, "visits: 2")
	assert.Contains(t, body, "lock held while running: yes")
}
