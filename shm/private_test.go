package shm

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/backend/backendtest"
	"github.com/ephpm/ephpm/contract"
	"github.com/ephpm/ephpm/sessionkeys"
)

// EPHPM_SHM_PRIVATE=1 runs every test that opens its segment through
// openWith on a private mapping instead (OpenPrivate), where its options
// allow one: how the engine behaves as one process's own store. Tests of
// the file, of other processes and of crashes fail then, as they must.
var privateTests = os.Getenv("EPHPM_SHM_PRIVATE") == "1"

func openForTest(name string, opts Options) (*Store, error) {
	if privateTests && opts.Dir == "" && !opts.Existing && opts.Owner == nil && opts.Anchor == 0 {
		return OpenPrivate(opts)
	}
	return Open(name, opts)
}

// openPrivate opens a private store for t, closed when t ends after its
// integrity is checked.
func openPrivate(t *testing.T, opts Options) *Store {
	t.Helper()
	s, err := OpenPrivate(opts)
	require.NoError(t, err)
	t.Cleanup(func() {
		if err := s.Check(); err != nil {
			t.Errorf("integrity: %v", err)
		}
		s.Close()
	})
	return s
}

func TestPrivatePassesTheContract(t *testing.T) {
	s := openPrivate(t, Options{Memory: contract.MemoryConfig{Limit: 8 << 20},
		SessionDataPrefix: sessionkeys.DataPrefix, SessionLockPrefix: sessionkeys.LockPrefix})
	backendtest.Run(t, s, backendtest.Coarse)
}

func TestPrivatePassesTheContractCompressed(t *testing.T) {
	s := openPrivate(t, Options{Memory: contract.MemoryConfig{Limit: 8 << 20, Compression: true, Policy: contract.AllKeysLRU}})
	backendtest.Run(t, s, backendtest.Coarse)
}

// A private store makes no file, in /dev/shm or anywhere, and refuses the
// options that name or share one.
func TestPrivateMakesNoFile(t *testing.T) {
	before, _ := filepath.Glob("/dev/shm/ephpm-*")
	s := openPrivate(t, Options{})
	require.NoError(t, s.Set("k", []byte("v"), 0))
	_, err := s.Fence("k") // the fence table, a file beside a segment
	require.NoError(t, err)
	after, _ := filepath.Glob("/dev/shm/ephpm-*")
	require.Equal(t, before, after)
	require.NoError(t, s.Revalidate())
	require.Equal(t, DefaultMemoryLimit, int(s.MemoryConfig().Limit))

	for _, o := range []Options{{Dir: t.TempDir()}, {Existing: true}, {Owner: UID(os.Geteuid())}, {Anchor: os.Getpid()}} {
		_, err := OpenPrivate(o)
		require.ErrorIs(t, err, contract.ErrInvalidArgument, "%+v", o)
	}
}

// Both mappings are left out of a forked child: the kernel shows the flag
// "dc" (do not copy) on them.
func TestPrivateIsNotCopiedOnFork(t *testing.T) {
	s := openPrivate(t, Options{Memory: contract.MemoryConfig{Limit: 1 << 20}})
	for _, mem := range [][]byte{s.g.mem, s.fenceTab.Load().mem} {
		v := vmaOf(t, mem)
		require.Contains(t, strings.Fields(v["VmFlags"]), "dc", "VmFlags %q", v["VmFlags"])
	}
}

// TestPrivateMemoryCost logs what a private segment costs: the virtual
// size of its mapping, and what is resident when opened and after writes.
func TestPrivateMemoryCost(t *testing.T) {
	for _, limit := range []int64{8 << 20, 64 << 20} {
		s := openPrivate(t, Options{Memory: contract.MemoryConfig{Limit: limit}})
		rss := func() string { return vmaOf(t, s.g.mem)["Rss"] }
		opened := rss()
		val := make([]byte, 64)
		n := 0
		for ; n < 1000; n++ {
			require.NoError(t, s.Set(fmt.Sprintf("key%08d", n), val, 0))
		}
		thousand := rss()
		for ; ; n++ {
			if err := s.Set(fmt.Sprintf("key%08d", n), val, 0); err != nil {
				break
			}
		}
		st, err := s.Stats()
		require.NoError(t, err)
		t.Logf("limit %d MiB: mapping %d KiB (+ fence table %d KiB); resident: opened %s, 1000 entries %s, full (%d entries, %d bytes charged) %s",
			limit>>20, len(s.g.mem)>>10, fenceFileSize>>10, opened, thousand, st.Keys, st.BytesUsed, rss())
	}
}

// vmaOf returns the fields of /proc/self/smaps for the mapping that starts
// at mem.
func vmaOf(t *testing.T, mem []byte) map[string]string {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	require.NoError(t, err)
	defer f.Close()
	start := strconv.FormatUint(uint64(uintptr(unsafe.Pointer(&mem[0]))), 16)
	sc := bufio.NewScanner(f)
	var v map[string]string
	for sc.Scan() {
		l := sc.Text()
		if f := strings.Fields(l); len(f) > 0 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":") {
			if v != nil {
				return v
			}
			if strings.TrimLeft(strings.SplitN(f[0], "-", 2)[0], "0") == start {
				v = map[string]string{}
			}
			continue
		}
		if v != nil {
			k, val, _ := strings.Cut(l, ":")
			v[k] = strings.TrimSpace(val)
		}
	}
	require.NotNil(t, v, "no mapping at %s", start)
	return v
}

// BenchmarkOpenPrivate is what a process pays to open its store (a CLI
// script pays it on its first call): the mapping and its header and shard
// initialisation.
func BenchmarkOpenPrivate(b *testing.B) {
	for _, limit := range []int64{8 << 20, 64 << 20} {
		b.Run(fmt.Sprintf("limit=%dMiB", limit>>20), func(b *testing.B) {
			for b.Loop() {
				s, err := OpenPrivate(Options{Memory: contract.MemoryConfig{Limit: limit}})
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer() // Close waits for a collection (store.go): not what a process pays
				s.Close()
				b.StartTimer()
			}
		})
	}
}
