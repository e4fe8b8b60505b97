//go:build ephpmtest

package bridge

import (
	"strings"
	"testing"
	"time"

	"github.com/ephpm/ephpm/backend"
	"github.com/ephpm/ephpm/contract"
)

// panicking is a backend whose lock pair and Del panic, for the guard of
// the exports (recoverStatus).
type panicking struct{ backend.Memory }

func (panicking) SetNX(string, []byte, time.Duration) (contract.SetNXOutcome, error) {
	panic("set_nx boom")
}
func (panicking) DelIfEq(string, []byte) (bool, error) { panic("del_if_eq boom") }
func (panicking) Del(string) (bool, error)             { panic("del boom") }

// A panic in Go never unwinds into C: the member answers E_UNAVAILABLE
// (outcome unknown), last_error says what panicked, and the table keeps
// working.
func TestAPanicIsAnUnknownOutcome(t *testing.T) {
	SetBackend(panicking{backend.Memory{Store: store}})
	defer SetBackend(backend.Memory{Store: store})
	for _, c := range []struct {
		op   int
		what string
	}{{memberSetNX, "set_nx boom"}, {memberDelIfEq, "del_if_eq boom"}, {memberDel, "del boom"}} {
		rc, _ := invokeMember(c.op, []byte("k"), []byte("tok"), false, false, 1000, 0)
		if rc != -2 {
			t.Fatalf("member %d answered %d after a panic, not E_UNAVAILABLE (-2)", c.op, rc)
		}
		rc, msg := invokeMember(memberLastError, nil, nil, false, false, 0, 256)
		if rc != 0 || !strings.Contains(string(msg), "panicked: "+c.what) {
			t.Fatalf("last_error after member %d's panic: rc %d, %q", c.op, rc, msg)
		}
	}
	SetBackend(backend.Memory{Store: store})
	if rc, _ := invokeMember(memberSetNX, []byte("after-panic"), []byte("tok"), false, false, 1000, 0); rc != 0 {
		t.Fatalf("set_nx after the panics answered %d", rc)
	}
	if rc, _ := invokeMember(memberDelIfEq, []byte("after-panic"), []byte("tok"), false, false, 0, 0); rc != 0 {
		t.Fatalf("del_if_eq after the panics answered %d", rc)
	}
}
