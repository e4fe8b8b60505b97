// The segment's memory setting: the eviction policy, compression and the
// session budget, kept in the header for every process that maps it.

package shm

import (
	"fmt"
	"sync/atomic"

	"github.com/ephpm/ephpm/contract"
)

func (s *Store) applyConfig(cfg contract.MemoryConfig, budget int64) {
	atomic.StoreInt64(s.g.i64(hSessSetting), cfg.SessionLimit)
	atomic.StoreInt64(s.g.i64(hSessLimit), budget)
	atomic.StoreUint32(s.g.u32(hPolicy), uint32(cfg.Policy))
	comp := uint32(0)
	if cfg.Compression {
		comp = 1
	}
	atomic.StoreUint32(s.g.u32(hCompression), comp)
	atomic.StoreUint32(s.g.u32(hMinSize), uint32(cfg.CompressionMinSize))
}

// MemoryConfig returns the segment's memory setting; the zero setting once
// the store is closed.
func (s *Store) MemoryConfig() contract.MemoryConfig {
	tk, err := s.enter()
	if err != nil {
		return contract.MemoryConfig{}
	}
	defer s.leave(tk)
	return s.memoryConfig()
}

// memoryConfig is MemoryConfig for a call in progress (it holds the ticket).
func (s *Store) memoryConfig() contract.MemoryConfig {
	on, minSize := s.compression()
	return contract.MemoryConfig{
		Limit:              s.g.limit,
		SessionLimit:       atomic.LoadInt64(s.g.i64(hSessSetting)),
		Policy:             contract.Policy(atomic.LoadUint32(s.g.u32(hPolicy))),
		Compression:        on,
		CompressionMinSize: minSize,
	}
}

// compression is the compression setting for a call in progress: whether
// it is on, and its minimum size. A write reads these two words only (an
// atomic load the compiler keeps even when its result goes unused).
func (s *Store) compression() (on bool, minSize int) {
	return atomic.LoadUint32(s.g.u32(hCompression)) == 1, int(atomic.LoadUint32(s.g.u32(hMinSize)))
}

// SetMemoryConfig applies a memory setting to the whole segment, for every
// process using it: the eviction policy, compression and the session
// budget. The memory limit is fixed when the segment is created: cfg.Limit
// must be 0 or that limit.
func (s *Store) SetMemoryConfig(cfg contract.MemoryConfig) error {
	if err := contract.CheckMemoryConfig(cfg); err != nil {
		return err
	}
	if cfg.Limit != 0 && cfg.Limit != s.g.limit {
		return fmt.Errorf("%w: segment %s has memory_limit %d, fixed when it was created, not %d; stop the "+
			"processes using it and remove the file to resize it", contract.ErrInvalidArgument, s.g.path, s.g.limit, cfg.Limit)
	}
	budget, err := s.g.sess.Budget(contract.MemoryConfig{Limit: s.g.limit, SessionLimit: cfg.SessionLimit})
	if err != nil {
		return err
	}
	tk, err := s.enter()
	if err != nil {
		return err
	}
	defer s.leave(tk)
	s.applyConfig(cfg, budget)
	return nil
}
