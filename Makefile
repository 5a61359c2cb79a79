# numalab: one-command set-up, build, run and test.
# `make run` installs what is missing, builds in release mode and runs the main job:
# the survey, which leaves numalab-survey/report.html.
# `make test` installs what is missing (also chromium for the report test, QEMU for the
# multi-node guests), builds the release binary the guests run, and runs the whole test suite.
# `make stress` runs the whole suite N times (default 10) with one core kept busy.

# MPI: rsmpi builds its bindings against Open MPI with libclang; mpirun launches ranks.
DEB_PACKAGES := libhwloc-dev libudev-dev pkg-config libopenmpi-dev openmpi-bin libclang-dev
# The report test renders report.html in a headless browser; the tiers test reads its
# hwloc export back with hwloc's own tools (hwloc-calc, lstopo: Debian's hwloc); the
# multi-node guest tests boot QEMU (TCG) guests from a busybox initramfs (tests/guests/run, which also fetches
# Debian's kernel package into target/guest).
GUEST_PACKAGES := qemu-system-x86 busybox-static cpio
# The cross-host tests build an emulated cluster (scripts/test-cluster): ip, tc, nsenter.
CLUSTER_PACKAGES := iproute2 util-linux
# The Slurm test runs Slurm's daemons on that cluster (scripts/test-slurm).
SLURM_PACKAGES := slurmctld slurmd slurm-client munge
TEST_PACKAGES := chromium hwloc $(GUEST_PACKAGES) $(CLUSTER_PACKAGES) $(SLURM_PACKAGES)
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
	$(CARGO) build --release --locked
	PROPTEST_RNG_SEED=$${PROPTEST_RNG_SEED:-20261123} $(CARGO) test --workspace --locked

stress: deps
	@bash scripts/install-deps.sh $(TEST_PACKAGES)
	$(CARGO) build --release --locked
	CARGO=$(CARGO) bash scripts/stress-tests.sh $(N)

# The same guards CI runs first (.ci/run): standing alone, files importing one way.
lint: deps
	bash scripts/check-standalone.sh
	python3 scripts/import-cycles.py
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings

clean:
	$(CARGO) clean
