//go:build ephpmtest

package bridge

import (
	"testing"

	"github.com/ephpm/ephpm/contract"
)

// The extension tells a refusal that did nothing from a failure whose
// outcome is unknown by the header's text at the start of last_error: Go's
// error must begin with exactly that text.
func TestNothingDoneIsTheHeadersText(t *testing.T) {
	if got, want := contract.ErrNothingDone.Error(), nothingDoneText(); got != want {
		t.Fatalf("contract.ErrNothingDone is %q, include/ephpm_kv.h's EPHPM_KV_NOTHING_DONE %q", got, want)
	}
}
