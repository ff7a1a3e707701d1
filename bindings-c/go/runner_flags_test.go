package throttlekit

import (
	"flag"
	"fmt"
)

// The conformance runner's flags, spelled as the Rust CLI's (`throttlekit conformance`):
//
//	go test -run TestConformanceRunner -args --store memory|redis|redis-cluster|redis-sentinel|postgres|sqlite \
//	    [--redis-url URL[,URL...]] [--redis-service-name NAME] [--redis-tls-ca FILE] \
//	    [--redis-tls-cert FILE] [--redis-tls-key FILE] [--redis-scripting auto|functions|eval] \
//	    [--postgres-url URL] [--sqlite-path FILE]
var (
	runnerStore       = flag.String("store", "", "memory, redis, redis-cluster, redis-sentinel, postgres or sqlite")
	runnerPostgresURL = flag.String("postgres-url", "", "postgres://user:password@host:port/db (--store postgres)")
	runnerSqlitePath  = flag.String("sqlite-path", "", "the SQLite file, created if missing (--store sqlite)")
	runnerURL         = flag.String("redis-url", "redis://127.0.0.1:6379", "one URL, seed nodes or sentinels, comma-separated")
	runnerServiceName = flag.String("redis-service-name", "", "the Sentinel service (redis-sentinel)")
	runnerTLSCA       = flag.String("redis-tls-ca", "", "PEM CA file to trust (rediss:// URLs)")
	runnerTLSCert     = flag.String("redis-tls-cert", "", "PEM client certificate (mutual TLS)")
	runnerTLSKey      = flag.String("redis-tls-key", "", "PEM client key (mutual TLS)")
	runnerScripting   = flag.String("redis-scripting", "auto", "auto, functions or eval")
)

// runnerRedisOptions maps the flags onto ConnectRedis's arguments (the library checks them).
func runnerRedisOptions() (string, RedisOptions, error) {
	modes := map[string]RedisMode{"redis": RedisStandalone, "redis-cluster": RedisCluster, "redis-sentinel": RedisSentinel}
	mode, ok := modes[*runnerStore]
	if !ok {
		return "", RedisOptions{}, fmt.Errorf("unknown store %q (memory, redis, redis-cluster or redis-sentinel)", *runnerStore)
	}
	scriptings := map[string]RedisScripting{"auto": ScriptingAuto, "functions": ScriptingFunctions, "eval": ScriptingEval}
	scripting, ok := scriptings[*runnerScripting]
	if !ok {
		return "", RedisOptions{}, fmt.Errorf("unknown scripting %q (auto, functions or eval)", *runnerScripting)
	}
	return *runnerURL, RedisOptions{
		Mode:        mode,
		ServiceName: *runnerServiceName,
		TLSCAFile:   *runnerTLSCA,
		TLSCertFile: *runnerTLSCert,
		TLSKeyFile:  *runnerTLSKey,
		Scripting:   scripting,
		TimeoutMs:   5000,
	}, nil
}
