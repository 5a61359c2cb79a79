# numalab: one-command set-up, build, run and test.
# `make run` installs what is missing, builds in release mode and runs the main job:
# the survey, which leaves numalab-survey/report.html.
# `make test` installs what is missing (also chromium, for the report test) and runs the whole test suite.

# MPI: rsmpi builds its bindings against Open MPI with libclang; mpirun launches ranks.
DEB_PACKAGES := libhwloc-dev libudev-dev pkg-config libopenmpi-dev openmpi-bin libclang-dev
# The report test renders report.html in a headless browser.
TEST_PACKAGES := chromium
CARGO ?= cargo

.PHONY: deps build run test lint clean

deps:
	@bash scripts/install-deps.sh $(DEB_PACKAGES)

build: deps
	$(CARGO) build --release --locked

run: build
	./target/release/numalab survey -o numalab-survey

test: deps
	@bash scripts/install-deps.sh $(TEST_PACKAGES)
	$(CARGO) test --workspace --locked

lint: deps
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings

clean:
	$(CARGO) clean
