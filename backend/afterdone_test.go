package backend_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/contract"
)

// errCause is a cause a store's refusal may name beside contract.ErrNothingDone
// (shm's ErrSegmentRemoved, redisstore's ErrEvictingServer).
var errCause = errors.New("cause")

// TestAfterDoneSaysNothingDoneOnlyBeforeAChange: a call of several steps
// refused at its first step keeps contract.ErrNothingDone; refused at a later
// step, after one that wrote or removed, it must not say nothing was done
// (the extension would report a known outcome), but still names its cause.
// (The members that fused a lock with a read or a write were composed so
// in the stores without a one-step form; each is one Step now.)
func TestAfterDoneSaysNothingDoneOnlyBeforeAChange(t *testing.T) {
	refused := fmt.Errorf("%w: %w: step 2 refused", contract.ErrNothingDone, errCause)
	require.ErrorIs(t, refused, contract.ErrNothingDone, "refused before any change")

	err := backend.AfterDone(refused)
	require.Error(t, err)
	require.ErrorIs(t, err, errCause)
	require.False(t, errors.Is(err, contract.ErrNothingDone), "refused after a change: %v", err)
	require.False(t, strings.HasPrefix(err.Error(), contract.ErrNothingDone.Error()), "refused after a change: %v", err)
	require.NotContains(t, err.Error(), contract.ErrNothingDone.Error())

	require.NoError(t, backend.AfterDone(nil))
	other := errors.New("lost reply")
	require.Equal(t, other, backend.AfterDone(other), "an unknown outcome stays as it is")
}
