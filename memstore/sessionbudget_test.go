package memstore_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/backend/backendtest"
	"github.com/ephpm/ephpm/contract"
	"github.com/ephpm/ephpm/memstore"
	"github.com/ephpm/ephpm/sessionkeys"
)

// TestSessionBudgetRules runs the session budget's rules, which the
// shared-memory store passes too, on the in-process store.
func TestSessionBudgetRules(t *testing.T) {
	backendtest.RunSessionBudget(t, func(t *testing.T, cfg contract.MemoryConfig, limitName string) backend.Backend {
		s := memstore.New(memstore.Options{SweepInterval: -1, SessionDataPrefix: sessionkeys.DataPrefix,
			SessionLockPrefix: sessionkeys.LockPrefix, SessionLimitName: limitName})
		t.Cleanup(s.Close)
		require.NoError(t, s.Configure(cfg))
		return backend.Memory{Store: s}
	})
}
