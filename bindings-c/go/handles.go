package throttlekit

// #include <stdint.h>
// #include <stdlib.h>
// #include <throttlekit.h>
import "C"

import "runtime"

// Store is where limiter state lives: in process (NewMemoryStore), on Redis (ConnectRedis), on
// Postgres (ConnectPostgres) or in a SQLite file (OpenSqlite). Share one among many limiters;
// each keeps its own reference, so Close on the Store only releases this handle.
type Store struct{ p *C.tk_store }

// NewMemoryStore returns an in-process store with the default bounds: about
// DefaultMaxKeys keys (least recently used evicted first) and full keys ("prefix:key") of at
// most DefaultMaxKeyLength bytes (longer is ErrConfigInvalid).
func NewMemoryStore() (*Store, error) {
	var p *C.tk_store
	if err := call(func() C.tk_result { return C.tk_store_memory_new(&p) }); err != nil {
		return nil, err
	}
	return newStore(p), nil
}

// The default bounds of NewMemoryStore (about 110 MB resident at the key bound).
const (
	DefaultMaxKeys      = int(C.TK_MEMORY_DEFAULT_MAX_KEYS)
	DefaultMaxKeyLength = int(C.TK_MEMORY_DEFAULT_MAX_KEY_LENGTH)
)

// NoLimit lifts a bound in MemoryLimits.
const NoLimit = -1

// MemoryLimits bounds a memory store. A zero field takes the default; NoLimit lifts it.
type MemoryLimits struct {
	MaxKeys      int // keys held at most (about); beyond, the least recently used is evicted
	MaxKeyLength int // longest full key in bytes; longer is ErrConfigInvalid
}

func limit(v, def int) C.size_t {
	switch {
	case v == 0:
		return C.size_t(def)
	case v < 0:
		return C.SIZE_MAX
	default:
		return C.size_t(v)
	}
}

// NewMemoryStoreWithLimits returns an in-process store with the given bounds.
func NewMemoryStoreWithLimits(limits MemoryLimits) (*Store, error) {
	var p *C.tk_store
	maxKeys, maxLen := limit(limits.MaxKeys, DefaultMaxKeys), limit(limits.MaxKeyLength, DefaultMaxKeyLength)
	if err := call(func() C.tk_result { return C.tk_store_memory_new_with_limits(maxKeys, maxLen, &p) }); err != nil {
		return nil, err
	}
	return newStore(p), nil
}

// Evictions is how many live keys a memory store has evicted to stay within its bound since
// it was made: when it climbs, the bound is too small for the traffic. ErrNotImplemented on Redis.
func (s *Store) Evictions() (uint64, error) {
	var n C.uint64_t
	if err := call(func() C.tk_result { return C.tk_store_memory_evictions(s.p, &n) }); err != nil {
		return 0, err
	}
	runtime.KeepAlive(s)
	return uint64(n), nil
}

// RedisMode says how the servers behind ConnectRedis's URLs are organised.
type RedisMode uint32

const (
	// RedisStandalone is one server: exactly one URL (the default).
	RedisStandalone RedisMode = C.TK_REDIS_MODE_STANDALONE
	// RedisCluster is a Redis Cluster: the URLs are seed nodes (any one that answers is enough).
	RedisCluster RedisMode = C.TK_REDIS_MODE_CLUSTER
	// RedisSentinel is Sentinel: the URLs are sentinels, ServiceName the master they follow.
	RedisSentinel RedisMode = C.TK_REDIS_MODE_SENTINEL
)

// RedisScripting says how the Lua scripts reach the server.
type RedisScripting uint32

const (
	// ScriptingAuto uses functions when the server accepts FUNCTION LOAD, else scripts (the default).
	ScriptingAuto RedisScripting = C.TK_REDIS_SCRIPTING_AUTO
	// ScriptingFunctions loads a function library once and calls FCALL.
	ScriptingFunctions RedisScripting = C.TK_REDIS_SCRIPTING_FUNCTIONS
	// ScriptingEval calls EVALSHA, and EVAL only after NOSCRIPT.
	ScriptingEval RedisScripting = C.TK_REDIS_SCRIPTING_EVAL
)

// RedisOptions configures ConnectRedis: core's Redis options (docs/redis.md), one field each.
// The zero value is a standalone, plaintext store with core's defaults. Every check is
// core's: a bad value or combination is ErrConfigInvalid naming the option.
type RedisOptions struct {
	// Mode: standalone (default), cluster (the URLs are seed nodes) or sentinel.
	Mode RedisMode
	// ServiceName is the Sentinel service (sentinel mode only, and required there).
	ServiceName string
	// TLSCAFile is a PEM file of CA certificates to trust instead of the system's roots
	// (rediss:// only). The certificate chain and host name are always verified.
	TLSCAFile string
	// TLSCertFile and TLSKeyFile are the PEM client certificate and key for mutual TLS.
	TLSCertFile string
	TLSKeyFile  string
	// Scripting: auto (default), functions or eval.
	Scripting RedisScripting
	// TimeoutMs bounds connecting and every call (0: the default, 1000 ms).
	TimeoutMs uint64
	// DeterministicReplay expires keys on each call's `now` instead of Redis's clock: for
	// replaying recorded timelines (conformance tests), never for production.
	DeterministicReplay bool
	// DurableReplicas makes each charge durable before it is admitted: that many replicas (at
	// most 64) must acknowledge the call's writes within DurableTimeoutMs, else the call fails
	// with ErrStoreUnavailable and the fail policy decides (0: off, the default).
	DurableReplicas uint32
	// DurableTimeoutMs is how long the server waits for those replicas (0: 100 ms); it must be
	// less than TimeoutMs.
	DurableTimeoutMs uint64
	// SentinelPassword is the password the sentinels themselves require (sentinel mode only);
	// the URLs' credentials stay the master's.
	SentinelPassword string
	// SentinelUsername is the sentinels' ACL user for SentinelPassword (empty: their default user).
	SentinelUsername string
	// ServerClock makes the limiters, multi limiters and shapers built on the store decide at
	// Redis's time (TIME, read by each script) instead of their clock's: the time a store
	// decides at then only moves forward for each key, whatever order callers reach it in (the
	// clock for a fleet whose clocks disagree). Their ...At calls' now then stamps only the fail
	// policy's fallback. false: each caller's own clock (the default).
	ServerClock bool
}

// ConnectRedis connects to Redis at urls: one URL (e.g. "redis://127.0.0.1:6379/0",
// "rediss://user:password@host:6380"), or several separated by commas (cluster seed nodes,
// sentinels). Unreachable servers and failed certificate checks are ErrStoreUnavailable.
func ConnectRedis(urls string, opts RedisOptions) (*Store, error) {
	var o C.tk_redis_options
	o.urls = cString(urls)
	o.service_name = optString(opts.ServiceName)
	o.tls_ca_file = optString(opts.TLSCAFile)
	o.tls_cert_file = optString(opts.TLSCertFile)
	o.tls_key_file = optString(opts.TLSKeyFile)
	o.sentinel_password = optString(opts.SentinelPassword)
	o.sentinel_username = optString(opts.SentinelUsername)
	defer func() {
		for _, c := range []*C.char{o.urls, o.service_name, o.tls_ca_file, o.tls_cert_file, o.tls_key_file,
			o.sentinel_password, o.sentinel_username} {
			free(c)
		}
	}()
	o.mode = C.uint32_t(opts.Mode)
	o.scripting = C.uint32_t(opts.Scripting)
	o.timeout_ms = C.uint64_t(opts.TimeoutMs)
	o.deterministic_replay = C.bool(opts.DeterministicReplay)
	o.durable_replicas = C.uint32_t(opts.DurableReplicas)
	o.durable_timeout_ms = C.uint64_t(opts.DurableTimeoutMs)
	o.server_clock = C.bool(opts.ServerClock)
	var p *C.tk_store
	if err := call(func() C.tk_result { return C.tk_store_redis_connect_with(&o, &p) }); err != nil {
		return nil, err
	}
	return newStore(p), nil
}

func newStore(p *C.tk_store) *Store {
	s := &Store{p}
	runtime.SetFinalizer(s, (*Store).Close)
	return s
}

// Close releases the handle (idempotent). Limiters built on the store keep working.
func (s *Store) Close() error {
	if s.p != nil {
		C.tk_store_free(s.p)
		s.p = nil
		runtime.SetFinalizer(s, nil)
	}
	return nil
}

// Clock is a manual clock for tests and simulations: it moves only when told to, and every
// limiter built on it reads it. Without a Clock, limiters read the system clock.
type Clock struct{ p *C.tk_clock }

// NewManualClock returns a clock showing nowMs (epoch ms).
func NewManualClock(nowMs int64) (*Clock, error) {
	var p *C.tk_clock
	if err := call(func() C.tk_result { return C.tk_clock_new_manual(C.int64_t(nowMs), &p) }); err != nil {
		return nil, err
	}
	c := &Clock{p}
	runtime.SetFinalizer(c, (*Clock).Close)
	return c, nil
}

// Set moves the clock to nowMs (backwards allowed).
func (c *Clock) Set(nowMs int64) error {
	defer runtime.KeepAlive(c)
	return call(func() C.tk_result { return C.tk_clock_set(c.p, C.int64_t(nowMs)) })
}

// Advance moves the clock forward by ms and returns the new time.
func (c *Clock) Advance(ms int64) (int64, error) {
	defer runtime.KeepAlive(c)
	var now C.int64_t
	err := call(func() C.tk_result { return C.tk_clock_advance(c.p, C.int64_t(ms), &now) })
	return int64(now), err
}

// Now reads the clock.
func (c *Clock) Now() (int64, error) {
	defer runtime.KeepAlive(c)
	var now C.int64_t
	err := call(func() C.tk_result { return C.tk_clock_now(c.p, &now) })
	return int64(now), err
}

// Close releases the handle (idempotent).
func (c *Clock) Close() error {
	if c.p != nil {
		C.tk_clock_free(c.p)
		c.p = nil
		runtime.SetFinalizer(c, nil)
	}
	return nil
}

// Strategy is a validated algorithm. Limiters copy it, so one Strategy can serve many.
type Strategy struct{ p *C.tk_strategy }

func newStrategy(f func(**C.tk_strategy) C.tk_result) (*Strategy, error) {
	var p *C.tk_strategy
	if err := call(func() C.tk_result { return f(&p) }); err != nil {
		return nil, err
	}
	s := &Strategy{p}
	runtime.SetFinalizer(s, (*Strategy).Close)
	return s, nil
}

// ParseStrategy parses a JSON strategy spec, e.g.
// {"kind":"gcra","options":{"limit":10,"periodMs":1000,"burst":5}} (every kind and option of
// the conformance vectors, quota included).
func ParseStrategy(json string) (*Strategy, error) {
	cjson := cString(json)
	defer free(cjson)
	return newStrategy(func(out **C.tk_strategy) C.tk_result { return C.tk_strategy_from_json(cjson, out) })
}

// GCRA allows limit requests per periodMs, burst at once (0: burst = limit).
func GCRA(limit, periodMs, burst uint64) (*Strategy, error) {
	return newStrategy(func(out **C.tk_strategy) C.tk_result {
		return C.tk_strategy_gcra(C.uint64_t(limit), C.uint64_t(periodMs), C.uint64_t(burst), out)
	})
}

// TokenBucket holds capacity tokens, refilled at refillPerSec a second; it starts full.
func TokenBucket(capacity uint64, refillPerSec float64) (*Strategy, error) {
	return newStrategy(func(out **C.tk_strategy) C.tk_result {
		return C.tk_strategy_token_bucket(C.uint64_t(capacity), C.double(refillPerSec), out)
	})
}

// FixedWindow allows limit units per epoch-aligned window of windowMs.
func FixedWindow(limit, windowMs uint64) (*Strategy, error) {
	return newStrategy(func(out **C.tk_strategy) C.tk_result {
		return C.tk_strategy_fixed_window(C.uint64_t(limit), C.uint64_t(windowMs), out)
	})
}

// SlidingWindow allows limit units per rolling windowMs, estimated over buckets sub-buckets
// (0: 10).
func SlidingWindow(limit, windowMs, buckets uint64) (*Strategy, error) {
	return newStrategy(func(out **C.tk_strategy) C.tk_result {
		return C.tk_strategy_sliding_window(C.uint64_t(limit), C.uint64_t(windowMs), C.uint64_t(buckets), out)
	})
}

// SlidingWindowLog allows exactly limit units per trailing windowMs.
func SlidingWindowLog(limit, windowMs uint64) (*Strategy, error) {
	return newStrategy(func(out **C.tk_strategy) C.tk_result {
		return C.tk_strategy_sliding_window_log(C.uint64_t(limit), C.uint64_t(windowMs), out)
	})
}

// Close releases the strategy (idempotent); limiters built from it are unaffected.
func (s *Strategy) Close() error {
	if s.p != nil {
		C.tk_strategy_free(s.p)
		s.p = nil
		runtime.SetFinalizer(s, nil)
	}
	return nil
}
