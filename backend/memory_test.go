package backend_test

import (
	"testing"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/backend/backendtest"
	"github.com/ephpm/ephpm/kv"
)

func TestMemoryPassesTheContract(t *testing.T) {
	s := kv.New(kv.Options{})
	defer s.Close()
	backendtest.Run(t, backend.Memory{Store: s})
}
