# numalab: one-command set-up, build, run and test.
# `make run` installs what is missing, builds in release mode and runs the main job.
# `make test` installs what is missing and runs the whole test suite.

DEB_PACKAGES := libhwloc-dev libudev-dev pkg-config
CARGO ?= cargo

.PHONY: deps build run test lint clean

deps:
	@bash scripts/install-deps.sh $(DEB_PACKAGES)

build: deps
	$(CARGO) build --release --locked

run: build
	./target/release/numalab topo

test: deps
	$(CARGO) test --workspace --locked

lint: deps
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings

clean:
	$(CARGO) clean
