# numalab: one-command set-up, build, run and test.
# `make run` installs what is missing, builds in release mode and runs the main job:
# the survey, which leaves numalab-survey/report.html.
# `make test` installs what is missing (also chromium, for the report test) and runs the whole test suite.
# `make stress` runs the whole suite N times (default 10) with one core kept busy.

DEB_PACKAGES := libhwloc-dev libudev-dev pkg-config
# The report test renders report.html in a headless browser.
TEST_PACKAGES := chromium
CARGO ?= cargo
N ?= 10

.PHONY: deps build run test stress lint clean

deps:
	@bash scripts/install-deps.sh $(DEB_PACKAGES)

build: deps
	$(CARGO) build --release --locked

run: build
	./target/release/numalab survey -o numalab-survey

# Property tests draw a fixed sequence of cases here, so a CI run is repeatable;
# `cargo test` by hand draws new ones (PROPTEST_RNG_SEED=N repeats a run).
test: deps
	@bash scripts/install-deps.sh $(TEST_PACKAGES)
	PROPTEST_RNG_SEED=$${PROPTEST_RNG_SEED:-20261123} $(CARGO) test --workspace --locked

stress: deps
	@bash scripts/install-deps.sh $(TEST_PACKAGES)
	CARGO=$(CARGO) bash scripts/stress-tests.sh $(N)

lint: deps
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings

clean:
	$(CARGO) clean
