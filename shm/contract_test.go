package shm

import (
	"testing"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/backend/backendtest"
	"github.com/ephpm/ephpm/contract"
	"github.com/ephpm/ephpm/sessionkeys"
)

var _ backend.Backend = (*Store)(nil)

func TestShmPassesTheContract(t *testing.T) {
	s := openWith(t, Options{Memory: contract.MemoryConfig{Limit: 8 << 20},
		SessionDataPrefix: sessionkeys.DataPrefix, SessionLockPrefix: sessionkeys.LockPrefix})
	backendtest.Run(t, s, backendtest.Coarse)
}

func TestShmPassesTheContractCompressed(t *testing.T) {
	s := openTest(t, contract.MemoryConfig{Limit: 8 << 20, Compression: true, Policy: contract.AllKeysLRU})
	backendtest.Run(t, s, backendtest.Coarse)
}
