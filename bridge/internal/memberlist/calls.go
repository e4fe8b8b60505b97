package memberlist

// Call says what a member's export calls when that is not the rule: the
// Backend method named after the member (set_nx: SetNX), answered as its
// results say (answers, in exports.go).
type Call struct {
	// Func is the Go function the export calls with the converted
	// arguments: a Backend method, or a function of package bridge
	// (composed.go).
	Func string
	// Answer is the answer helper of answers.go that maps the results,
	// for a member that reads them unlike others of the same shape.
	Answer string
}

// Calls is the one place that holds a member's Go side when it cannot be
// derived: every member of the header not listed here (and not InC) is the
// Backend method of its name, or, where Backend has none, the function of
// package backend of its name called with the backend first (the members
// that are one Step: set_guarded is backend.SetGuarded). A member appended
// to the header needs a row only if it is neither.
var Calls = map[string]Call{
	// The Backend reads into the caller's buffer: GetInto, not a Get that
	// would allocate.
	"get": {Func: "GetInto"},
	// Wait's false is "still held": EXISTS, not MISS.
	"wait": {Answer: "freed"},
	// The waiting members: lockwait.Locker's loop over the Backend's one
	// attempt (SetNX, SetNXFenced, SetNXGet, SetNXGetFenced, LockAttempt).
	"set_nx_wait":            {Func: "setNXWait"},
	"set_nx_wait_fenced":     {Func: "setNXWaitFenced"},
	"set_nx_wait_get":        {Func: "setNXWaitGet"},
	"set_nx_wait_get_fenced": {Func: "setNXWaitGetFenced"},
	"lock_acquire":           {Func: "lockAcquire"},
	// Served by the bridge, not by a backend.
	"configure":     {Func: "configureText"},
	"stats":         {Func: "fillStats"},
	"begin_request": {Func: "beginRequest"},
	// The backend's walk, written as the header's records.
	"scan": {Func: "scanInto"},
	// One Step from the caller's struct; an acquire's wait is lockwait's
	// loop over its attempts (step.go).
	"step": {Func: "stepCall"},
}
