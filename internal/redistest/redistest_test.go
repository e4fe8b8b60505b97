package redistest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A server started on a port that another process's server holds does
// not pass for started while it has not exited yet (on a loaded host a
// redis-server that cannot bind can take longer to exit than the start
// waits): the one answering there is the other's, by its INFO's process
// id. The process started here is a sleep, which never exits in time.
func TestAnotherProcessOnThePortIsNotTakenForTheServer(t *testing.T) {
	first := Start(t)
	s := &Server{Addr: first.Addr, Port: first.Port, argv: []string{"sleep", "60"}}
	err := s.start(time.Now().Add(startLimit))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "another process")
	assert.Nil(t, s.cmd, "the process started is stopped")
	assert.NotZero(t, first.PID(), "the first server runs on")
}
