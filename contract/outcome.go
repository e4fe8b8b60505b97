package contract

import "fmt"

// SetNXOutcome says what SetNX did.
type SetNXOutcome int

const (
	// Inserted: the key was absent (or expired) and now holds the value.
	Inserted SetNXOutcome = iota + 1
	// Exists: a live entry was already there; nothing changed.
	Exists
)

func (o SetNXOutcome) String() string {
	switch o {
	case Inserted:
		return "inserted"
	case Exists:
		return "exists"
	}
	return fmt.Sprintf("SetNXOutcome(%d)", int(o))
}
