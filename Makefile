# The two commands of the README, plus the steps they are made of.
.PHONY: run test bench deps sqlx-prepare

# Build (release) and run Toolgate on $TOOLGATE_ADDR (default 127.0.0.1:3000), with the
# embedded PostgreSQL unless DATABASE_URL is set.
run: deps
	scripts/build-site.sh release
	scripts/run.sh

# Every test: Rust unit and integration tests against a private PostgreSQL cluster, then the
# end-to-end suite in headless Chromium.
test:
	scripts/install-deps.sh --test
	scripts/test.sh

# Benchmarks (release builds, a private PostgreSQL); not part of `make test`.
bench:
	scripts/install-deps.sh --bench
	scripts/bench.sh

deps:
	scripts/install-deps.sh

# Regenerates .sqlx/ (query metadata for offline builds) against a private cluster.
sqlx-prepare:
	scripts/sqlx-prepare.sh
