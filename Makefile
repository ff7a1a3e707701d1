# One task runner for the whole project; CI calls `make test`.
.PHONY: demo test lint bench fmt vectors dist fuzz chaos soak

# The main job: every algorithm on the same bursty traffic, on the embedded memory store.
demo:
	cargo run --release -p throttlekit-cli -- demo

# Installs what is missing and runs every test suite.
test:
	scripts/test.sh

lint:
	scripts/lint.sh

fmt:
	cargo fmt --all

# Every cargo-fuzz target for FUZZ_SECONDS (default 60) each (not part of `make test`).
fuzz:
	scripts/fuzz.sh

# Peer benchmarks (not part of `make test`).
bench:
	bench/run.sh

# Regenerates the vectors files that are generated (hand-checked layout, recorded timelines,
# adaptive concurrency timelines).
vectors:
	python3 conformance-vectors/src/hand_checked.py
	python3 conformance-vectors/src/http_vectors.py
	cargo run -q -p throttlekit --example record_vectors > conformance-vectors/recorded-timelines.json
	cargo run -q -p throttlekit --example record_adaptive_vectors > conformance-vectors/adaptive/timelines.json

# Release artifacts into dist/: the .crate, the C tarball, the wheel and sdist, the npm tarballs
# (scripts/dist/build.sh; docs/release.md).
dist:
	scripts/dist/build.sh

# Mixed load from Rust, Python, Node and Go on a 3+3 cluster and a Sentinel pair while nodes are
# killed, paused and cut off (CHAOS_SECONDS, default 300; tests/faults/chaos.py, docs/reliability.md).
chaos:
	tests/faults/chaos.sh

# Steady load with faults every few seconds: memory, descriptors and threads must stay flat
# (SOAK_SECONDS, default 600; tests/faults/soak.py).
soak:
	tests/faults/soak.sh
