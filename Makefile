# workoutd: `make run` replays the bundled ride on the simulated board; `make test` runs every
# test. Both install what they need from Debian's packages first (root, or sudo).

SWIFT        ?= swift
PREFIX       ?= /usr
DESTDIR      ?=
SYSCONFDIR   ?= /etc
BINDIR       ?= $(PREFIX)/bin
DATADIR      ?= $(PREFIX)/share
DOCDIR       ?= $(DATADIR)/doc/workoutd
# Where systemd and udev want their files, as their pkg-config files say (Debian: /lib/...).
PKG_VAR       = $(shell pkg-config --variable=$(2) $(1) 2>/dev/null)
UNITDIR      ?= $(or $(call PKG_VAR,systemd,systemdsystemunitdir),/lib/systemd/system)
SYSUSERSDIR  ?= $(or $(call PKG_VAR,systemd,sysusersdir),/usr/lib/sysusers.d)
TMPFILESDIR  ?= $(or $(call PKG_VAR,systemd,tmpfilesdir),/usr/lib/tmpfiles.d)
UDEVRULESDIR ?= $(or $(call PKG_VAR,udev,udevdir),/lib/udev)/rules.d

# Debian bookworm packages: the C libraries we link (-dev), all that building and `make run`
# need; and the real programs the tests, the fault campaign and the benchmarks run (gpsd, a
# browser, the validators), installed by the targets that run them.
APT_PACKAGES  = pkg-config libsqlite3-dev libgps-dev libgpiod-dev libbluetooth-dev libqrencode-dev libssl-dev \
                libcurl4-openssl-dev
TEST_PACKAGES = gpsd gpsd-clients python3 sqlite3 systemd udev strace time python3-venv libxml2-utils gpsbabel \
                dosfstools mtools zbar-tools chromium chromium-driver openssl
DEPS_STAMP    = .build/.deps-$(shell echo $(APT_PACKAGES) | md5sum | cut -c1-8)
TEST_DEPS_STAMP = .build/.test-deps-$(shell echo $(TEST_PACKAGES) | md5sum | cut -c1-8)
SUDO          = $(if $(filter 0,$(shell id -u)),,sudo)
# Installs those of the packages $(1) that are missing (apt-get update first: a fresh machine
# has no lists).
APT_INSTALL   = missing=$$(for p in $(1); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing:" $$missing; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

RELEASE_FLAGS = -c release --static-swift-stdlib
# The release binaries are linked by the toolchain's lld with packed relative relocations
# (DT_RELR, glibc >= 2.36: bookworm and trixie): the 2 MB of RELA entries a static Swift binary
# carries, all read at every start, become 16 KB (peak RSS 22.0 -> 20.3 MiB; git show bc8057a:BENCHMARKS.md).
# Hardened as Debian builds are (lintian: hardening-no-bindnow): full RELRO with immediate
# binding. (_FORTIFY_SOURCE is set for the C targets in Package.swift: given to Swift's
# importer too, trixie's glibc 2.41 headers make `poll` ambiguous.)
# And its segments aligned to 64 KiB (lld's default on aarch64; 4 KiB on x86_64): the kernel
# loads the executable at an address aligned as its segments are, and fault-around (below) maps
# the 64 KiB window of virtual addresses around a page touched. At 4 KiB, the address ASLR chose
# shifted those windows across the file at each start, and the executable's resident pages with
# them: 10,576-11,248 KB over six runs of one ride, now 10,484 KB in every run (git show bc8057a:BENCHMARKS.md).
LINK_FLAGS    = -Xswiftc -use-ld=lld -Xlinker -z -Xlinker pack-relative-relocs -Xlinker -z -Xlinker relro \
                -Xlinker -z -Xlinker now -Xlinker -z -Xlinker max-page-size=65536
# Code layout: each function in a section of its own, and the functions a ride runs placed
# together first, in the order of $(ORDER_FILE) (ORDER_FLAGS). The kernel maps an executable
# 64 KiB around each page touched; scattered among cold code the same functions kept 9.3 MB of
# it resident, together 6.3 MB (peak RSS recording on the Linux board 22.1 -> 17.6 MiB; git show
# bc8057a:BENCHMARKS.md). A name a later build lacks is ignored: a stale order costs memory,
# never correctness.
# And no dynamic symbol table of our own: the toolchain's static-stdlib-args.lnk exports every
# symbol of the executable (-export-dynamic, for dladdr in crash reports), 13,000 names whose
# hash table and strings the dynamic loader reads at every symbol lookup it makes at start
# (1.1 MB resident). Nothing dlsym's into the executable; crash reports still name functions
# from .symtab. (17.6 -> 16.5 MiB.)
# And the C++ runtime under Swift's runtime linked in (libstdc++.a, GCC's runtime library
# exception): loaded as libstdc++.so it held 1.4 MiB of the service's resident memory, of which
# the service uses a few functions. .build/static-libstdc++ holds only a link to the toolchain's
# libstdc++.a, so `-lstdc++` (static-stdlib-args.lnk) finds that first.
STATIC_CXX    = $(CURDIR)/.build/static-libstdc++
CXX_FLAGS     = -Xlinker -L$(STATIC_CXX)
STATIC_CXX_LINK = archive=$$($(dir $(realpath $(shell command -v $(SWIFT))))clang++ -print-file-name=libstdc++.a); \
	  case $$archive in /*) ;; *) echo "libstdc++.a not found (libstdc++-dev for the toolchain's GCC)"; exit 1;; esac; \
	  mkdir -p $(STATIC_CXX) && ln -sfn $$archive $(STATIC_CXX)/libstdc++.a
LAYOUT_FLAGS  = -Xswiftc -Xfrontend -Xswiftc -function-sections -Xcc -ffunction-sections -Xlinker --no-export-dynamic
ORDER_FLAGS   = -Xlinker --symbol-ordering-file=$(1) -Xlinker --no-warn-symbol-ordering
# The order is made by Benchmarks/symbol-order.py from this checkout's release build, run under
# callgrind through a ride (about 2 minutes), whenever the code or the scripts are newer than
# it. ORDER_FILE=FILE gives one instead, used as it is: the package builds take the host tree's
# (their copy has none), the arm64 build the x86_64 one (callgrind cannot run aarch64 code here;
# Swift's mangled names are the same on both), and CI makes one for all its builds.
ORDER_FILE   ?= $(CURDIR)/.build/workoutd.order
ORDER_INPUTS  = Package.swift $(wildcard Package.resolved) $(shell find Sources -type f) \
                $(addprefix Benchmarks/,symbol-order.py benchlib.py device.py recording.py web.py)
ORDER_PACKAGES = valgrind gpsd gpsd-clients python3
# A release link without the order, callgrind on it, the order written.
define MAKE_ORDER
@$(call APT_INSTALL,$(ORDER_PACKAGES))
@$(STATIC_CXX_LINK)
$(SWIFT) build $(RELEASE_FLAGS) $(LINK_FLAGS) $(CXX_FLAGS) $(LAYOUT_FLAGS)
python3 Benchmarks/symbol-order.py --bin $$($(SWIFT) build $(RELEASE_FLAGS) --show-bin-path) --out $(ORDER_FILE)
endef
RUN_SPEED    ?= 100
RUN_DIR      ?= .run/$(shell date -u +%Y%m%dT%H%M%SZ)

.PHONY: symbol-order man versions deb deb-deps all deps test-deps decoders build release run test test-browser faults fuzz lint format verify-units bench install uninstall test-board test-board-trixie clean

all: build

deps: $(DEPS_STAMP)
$(DEPS_STAMP):
	@$(call APT_INSTALL,$(APT_PACKAGES))
	@command -v $(SWIFT) >/dev/null || { echo "Swift 6 is needed (https://www.swift.org/install/linux/)"; exit 1; }
	@mkdir -p .build && touch $@

test-deps: $(TEST_DEPS_STAMP)
$(TEST_DEPS_STAMP): | deps
	@$(call APT_INSTALL,$(TEST_PACKAGES))
	@mkdir -p .build && touch $@

build: deps
	$(SWIFT) build

# (A given ORDER_FILE has no rule: used as it is, and an error if missing.)
ifeq ($(origin ORDER_FILE),file)
$(ORDER_FILE): $(ORDER_INPUTS) | deps
	$(MAKE_ORDER)
endif

release: deps $(ORDER_FILE)
	@$(STATIC_CXX_LINK)
	@# SwiftPM does not know the order file is a link input: relink when it is newer.
	@bin=$$($(SWIFT) build $(RELEASE_FLAGS) --show-bin-path); for p in workoutd workoutctl gps-bench; do \
	  [ ! $(ORDER_FILE) -nt $$bin/$$p ] || rm -f $$bin/$$p; done
	$(SWIFT) build $(RELEASE_FLAGS) $(LINK_FLAGS) $(CXX_FLAGS) $(LAYOUT_FLAGS) $(call ORDER_FLAGS,$(ORDER_FILE))

# Records the bundled ride (board/sim/rides, a real Garmin Edge 500 ride) on the simulated
# board at $(RUN_SPEED)x, shows progress, then the session summary and where the data is.
run: build
	@bin=$$($(SWIFT) build --show-bin-path); dir=$(RUN_DIR); mkdir -p $$dir; \
	echo "recording the bundled ride at $(RUN_SPEED)x into $$dir (log: $$dir/workoutd.log)"; \
	$$bin/workoutd --board sim --speed $(RUN_SPEED) --exit-at-end --state-dir $$dir --runtime-dir $$dir/run \
	  2> $$dir/workoutd.log & pid=$$!; \
	trap 'kill $$pid 2>/dev/null' INT TERM; \
	while kill -0 $$pid 2>/dev/null; do \
	  sleep 2; $$bin/workoutctl status --brief --state-dir $$dir --runtime-dir $$dir/run 2>/dev/null; \
	done; \
	wait $$pid; rc=$$?; \
	if [ $$rc -ne 0 ]; then tail -20 $$dir/workoutd.log; exit $$rc; fi; \
	echo; $$bin/workoutctl show 1 --state-dir $$dir --runtime-dir $$dir/run; \
	echo; echo "data: $$dir/workoutd.db (SQLite; tables session, event, point, lap, rr_interval, export)"; \
	echo "      $$dir/exports/ (the session's FIT and GPX)"; \
	echo "      $$bin/workoutctl sessions --state-dir $$dir"

# The reference decoders the export tests read our files back with (Garmin's FIT SDK and
# fitdecode, pinned in Tests/WorkoutExportTests/requirements.txt), in a venv from PyPI; and the
# XML schemas the GPX and TCX tests validate against with xmllint, in .build/pyref/xsd. GPX 1.1
# and TCX v2 come from Debian's pytrainer package (downloaded and unpacked, never installed;
# their sha256 checked): their licences (GPL, or none stated) keep them out of the repository.
# Garmin's TrackPointExtension v1 and ActivityExtension v2 are the project's own, written from
# their published element definitions (Tests/WorkoutExportTests/xsd, beside two wrappers that
# each import a format's schema and its extension's, so one run checks both).
SCHEMA_DIR   = .build/pyref/xsd
XSD_SHA256   = e0e4cb84f096f65b03fb2d391d74a5389563fe015f17a011ccfe7e37c01267f0 Topografix_gpx11.xsd \
               d64d687488dfe429ea3ce2ac4f1fbc7c333d80776a478b2b6843c7cc0403cda9 GarminTrainingCenterDatabase_v2.xsd
DECODERS = .build/pyref/.stamp-$(shell cat Tests/WorkoutExportTests/requirements.txt Tests/WorkoutExportTests/xsd/*.xsd \
             | md5sum | cut -c1-8)
decoders: $(DECODERS)
$(DECODERS): Tests/WorkoutExportTests/requirements.txt $(wildcard Tests/WorkoutExportTests/xsd/*.xsd) | test-deps
	rm -rf .build/pyref && python3 -m venv .build/pyref
	.build/pyref/bin/pip install -q -r Tests/WorkoutExportTests/requirements.txt
	mkdir -p $(SCHEMA_DIR)/deb
	cd $(SCHEMA_DIR)/deb && { apt-get download -qq pytrainer || { $(SUDO) apt-get update -qq && apt-get download -qq pytrainer; }; } \
	  && dpkg-deb -x pytrainer_*_all.deb .
	cd $(SCHEMA_DIR) && for f in $(filter %.xsd,$(XSD_SHA256)); do cp deb/usr/share/pytrainer/schemas/$$f .; done && \
	  printf '%s  %s\n' $(XSD_SHA256) | sha256sum -c --quiet && rm -rf deb
	cp Tests/WorkoutExportTests/xsd/*.xsd $(SCHEMA_DIR)/
	touch $@

test: test-deps lint versions decoders
	$(SWIFT) build --build-tests
	$(MAKE) --no-print-directory verify-units
	$(SWIFT) test
	$(MAKE) --no-print-directory test-browser

# The phone page in a real browser (Debian's chromium, headless, through chromedriver): pairs,
# watches a replayed ride, controls it, notes a drink, opens the ride page (about 70 s: the ride
# runs in real time to the simulated button's press). Screenshots in $(ARTIFACTS)/browser.
ARTIFACTS ?= $(CURDIR)/.build/artifacts
test-browser: build test-deps
	ARTIFACTS=$(ARTIFACTS)/browser python3 Tests/Browser/browser_test.py --bin $$($(SWIFT) build --show-bin-path)

# What this build is made against: the OS release and the C libraries' versions (bookworm:
# libgpiod 1.6, libgps 3.22; trixie: libgpiod 2.2, libgps 3.25).
versions: deps
	@. /etc/os-release; echo "building on $$PRETTY_NAME: libgpiod $$(pkg-config --modversion libgpiod)," \
	  "libgps $$(pkg-config --modversion libgps), SQLite $$(pkg-config --modversion sqlite3)," \
	  "systemd $$(systemctl --version 2>/dev/null | awk 'NR==1 {print $$2}'), $$($(SWIFT) --version 2>&1 | head -1)"

# systemd-analyze checks the unit (pointed at the built binary, as verify needs an executable),
# and its exposure score must stay at 3.0 or lower.
verify-units: build test-deps
	@tmp=$$(mktemp -d); bin=$$($(SWIFT) build --show-bin-path); \
	sed "s|^ExecStart=/usr/bin/workoutd|ExecStart=$$bin/workoutd|" systemd/workoutd.service > $$tmp/workoutd.service; \
	systemd-analyze verify $$tmp/workoutd.service || { rm -rf $$tmp; exit 1; }; \
	score=$$(systemd-analyze security --offline=true $$tmp/workoutd.service | sed -n 's/.*exposure level for workoutd.service: \([0-9.]*\).*/\1/p'); \
	rm -rf $$tmp; echo "workoutd.service: systemd-analyze verify clean, exposure $$score"; \
	awk -v s="$$score" 'BEGIN { exit !(s != "" && s <= 3.0) }' || { echo "exposure $$score is above 3.0"; exit 1; }
	@# The USB stick copier's template, as the instance udev starts for a stick's sda1.
	@tmp=$$(mktemp -d); bin=$$($(SWIFT) build --show-bin-path); \
	sed "s|/usr/bin/workoutctl|$$bin/workoutctl|" systemd/workoutd-usb@.service > $$tmp/workoutd-usb@sda1.service; \
	systemd-analyze verify --man=no $$tmp/workoutd-usb@sda1.service || { rm -rf $$tmp; exit 1; }; \
	score=$$(systemd-analyze security --offline=true $$tmp/workoutd-usb@sda1.service | sed -n 's/.*exposure level for workoutd-usb@sda1.service: \([0-9.]*\).*/\1/p'); \
	rm -rf $$tmp; echo "workoutd-usb@.service: systemd-analyze verify clean, exposure $$score"; \
	awk -v s="$$score" 'BEGIN { exit !(s != "" && s <= 3.0) }' || { echo "exposure $$score is above 3.0"; exit 1; }
	@# The unit that tells the rider a stick cannot take the rides, as udev starts it for sdb.
	@tmp=$$(mktemp -d); bin=$$($(SWIFT) build --show-bin-path); \
	sed "s|/usr/bin/workoutctl|$$bin/workoutctl|" systemd/workoutd-usb-unusable@.service > $$tmp/workoutd-usb-unusable@sdb.service; \
	systemd-analyze verify --man=no $$tmp/workoutd-usb-unusable@sdb.service || { rm -rf $$tmp; exit 1; }; \
	score=$$(systemd-analyze security --offline=true $$tmp/workoutd-usb-unusable@sdb.service | sed -n 's/.*exposure level for workoutd-usb-unusable@sdb.service: \([0-9.]*\).*/\1/p'); \
	rm -rf $$tmp; echo "workoutd-usb-unusable@.service: systemd-analyze verify clean, exposure $$score"; \
	awk -v s="$$score" 'BEGIN { exit !(s != "" && s <= 3.0) }' || { echo "exposure $$score is above 3.0"; exit 1; }
	@# The USB drive's gadget unit (root, configfs) and its path unit.
	@tmp=$$(mktemp -d); bin=$$($(SWIFT) build --show-bin-path); \
	sed "s|/usr/bin/workoutctl|$$bin/workoutctl|" systemd/workoutd-usb-drive.service > $$tmp/workoutd-usb-drive.service; \
	cp systemd/workoutd-usb-drive.path $$tmp/; \
	systemd-analyze verify --man=no $$tmp/workoutd-usb-drive.service $$tmp/workoutd-usb-drive.path || { rm -rf $$tmp; exit 1; }; \
	score=$$(systemd-analyze security --offline=true $$tmp/workoutd-usb-drive.service | sed -n 's/.*exposure level for workoutd-usb-drive.service: \([0-9.]*\).*/\1/p'); \
	rm -rf $$tmp; echo "workoutd-usb-drive.service: systemd-analyze verify clean, exposure $$score"; \
	awk -v s="$$score" 'BEGIN { exit !(s != "" && s <= 3.0) }' || { echo "exposure $$score is above 3.0"; exit 1; }
	@# The low battery's poweroff: the path unit the service's flag starts, and its oneshot.
	@tmp=$$(mktemp -d); cp systemd/workoutd-poweroff.service systemd/workoutd-poweroff.path $$tmp/; \
	systemd-analyze verify --man=no $$tmp/workoutd-poweroff.service $$tmp/workoutd-poweroff.path || { rm -rf $$tmp; exit 1; }; \
	score=$$(systemd-analyze security --offline=true $$tmp/workoutd-poweroff.service | sed -n 's/.*exposure level for workoutd-poweroff.service: \([0-9.]*\).*/\1/p'); \
	rm -rf $$tmp; echo "workoutd-poweroff.service: systemd-analyze verify clean, exposure $$score"; \
	awk -v s="$$score" 'BEGIN { exit !(s != "" && s <= 3.0) }' || { echo "exposure $$score is above 3.0"; exit 1; }
	@# The uploads' sender: its socket, and the instance systemd starts for a connection.
	@tmp=$$(mktemp -d); bin=$$($(SWIFT) build --show-bin-path); cp systemd/workoutd-upload.socket $$tmp/; \
	sed "s|/usr/bin/workoutd|$$bin/workoutd|" systemd/workoutd-upload@.service > $$tmp/workoutd-upload@.service; \
	cp $$tmp/workoutd-upload@.service $$tmp/workoutd-upload@1-2-3.service; \
	systemd-analyze verify --man=no $$tmp/workoutd-upload.socket $$tmp/workoutd-upload@1-2-3.service || { rm -rf $$tmp; exit 1; }; \
	score=$$(systemd-analyze security --offline=true $$tmp/workoutd-upload@1-2-3.service | sed -n 's/.*exposure level for workoutd-upload@1-2-3.service: \([0-9.]*\).*/\1/p'); \
	rm -rf $$tmp; echo "workoutd-upload@.service: systemd-analyze verify clean, exposure $$score"; \
	awk -v s="$$score" 'BEGIN { exit !(s != "" && s <= 3.0) }' || { echo "exposure $$score is above 3.0"; exit 1; }
	@# The inertial sensor's set-up (root), as udev starts it (for iio:device0: a colon confuses verify).
	@tmp=$$(mktemp -d); bin=$$($(SWIFT) build --show-bin-path); \
	sed "s|/usr/bin/workoutd|$$bin/workoutd|" systemd/workoutd-imu@.service > $$tmp/workoutd-imu@device0.service; \
	systemd-analyze verify --man=no $$tmp/workoutd-imu@device0.service || { rm -rf $$tmp; exit 1; }; \
	score=$$(systemd-analyze security --offline=true $$tmp/workoutd-imu@device0.service | sed -n 's/.*exposure level for workoutd-imu@device0.service: \([0-9.]*\).*/\1/p'); \
	rm -rf $$tmp; echo "workoutd-imu@.service: systemd-analyze verify clean, exposure $$score"; \
	awk -v s="$$score" 'BEGIN { exit !(s != "" && s <= 3.0) }' || { echo "exposure $$score is above 3.0"; exit 1; }
	@# sysusers and tmpfiles applied to an empty root: the user exists and the directories get it.
	@root=$$(mktemp -d); mkdir -p $$root/etc $$root/usr/lib/sysusers.d $$root/usr/lib/tmpfiles.d; \
	cp systemd/workoutd.sysusers $$root/usr/lib/sysusers.d/workoutd.conf; \
	cp systemd/workoutd.tmpfiles $$root/usr/lib/tmpfiles.d/workoutd.conf; \
	systemd-sysusers --root=$$root && systemd-tmpfiles --root=$$root --create && \
	grep -q '^workoutd:' $$root/etc/passwd && \
	echo "sysusers/tmpfiles: user $$(grep '^workoutd:' $$root/etc/passwd | cut -d: -f1,3,6)," \
	  "/var/lib/workoutd mode $$(stat -c %a $$root/var/lib/workoutd) group $$(stat -c %g $$root/var/lib/workoutd)"; \
	rc=$$?; rm -rf $$root; exit $$rc

# The fault campaign: the real binaries on the simulated board, broken the ways the field breaks
# them (kill -9 at 100 random moments, unreadable resume snapshots, a database owned by someone
# else or from a newer release, a lost WAL, a full disk, a corrupt file). Under 8 minutes.
faults: build test-deps
	python3 Tests/Faults/campaign.py --bin $$($(SWIFT) build --show-bin-path)

# The fuzz targets (Tests/Fuzz): libFuzzer with AddressSanitizer over the BLE decoders, the
# speed/cadence calculators, the ATT PDU decoder, the scan's decoders, the web server's request
# parser, gpsd's reports, the ANT frame reader and messages and the ANT+ profiles' pages,
# FUZZ_SECONDS each (CI: FUZZ_SECONDS=15).
# Built apart in .build/fuzz (its instrumented objects never mix with the ordinary build);
# new inputs go to .build/fuzz/corpus/<target>, starting from Tests/Fuzz/seeds/<target>; an
# input that fails lands in .build/fuzz/artifacts/ (keep it in Tests/Fuzz/regressions/<target>
# once fixed: the unit tests replay those). Prints each target's executions per second.
FUZZ_SECONDS ?= 300
FUZZ_TARGETS  = fuzz-ble-heart-rate fuzz-ble-cycling-power fuzz-ble-csc fuzz-ble-readables \
                fuzz-ble-revolutions fuzz-att-pdu fuzz-ble-scan fuzz-http-request fuzz-gpsd-json \
                fuzz-ant-message fuzz-ant-pages
FUZZ_BUILD    = $(SWIFT) build --scratch-path .build/fuzz -c debug -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING
fuzz: test-deps
	@for t in $(FUZZ_TARGETS); do $(FUZZ_BUILD) --product $$t >/dev/null || { $(FUZZ_BUILD) --product $$t; exit 1; }; done
	@bin=$$($(FUZZ_BUILD) --show-bin-path); failed=; mkdir -p .build/fuzz/artifacts; \
	for t in $(FUZZ_TARGETS); do \
	  mkdir -p .build/fuzz/corpus/$$t; \
	  SWIFT_BACKTRACE=enable=no $$bin/$$t -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	    -artifact_prefix=.build/fuzz/artifacts/$$t- .build/fuzz/corpus/$$t Tests/Fuzz/seeds/$$t \
	    > .build/fuzz/$$t.log 2>&1 || failed="$$failed $$t"; \
	  awk -v t=$$t '/^stat::number_of_executed_units/ {n=$$2} /^stat::average_exec_per_sec/ {r=$$2} \
	    /DONE/ {c=$$4} END {printf "%-24s %10d runs %8d exec/s  coverage %s\n", t, n, r, c}' .build/fuzz/$$t.log; \
	done; \
	if [ -n "$$failed" ]; then echo "fuzz: failed:$$failed (logs in .build/fuzz/, inputs in .build/fuzz/artifacts/)"; exit 1; fi

# One formatter for all: swift-format from the toolchain, with the checked-in .swift-format.
lint:
	$(SWIFT) format lint --strict --recursive Package.swift Sources Tests Benchmarks

format:
	$(SWIFT) format --in-place --recursive Package.swift Sources Tests Benchmarks

# The per-second cost on a Pi's terms (BENCHMARKS.md): bytes written, fsyncs, CPU and RSS per
# recorded second; workoutd against gpxlogger on one gpsd at 1 Hz (CPU, wake-ups, writes), on
# this checkout's filesystem and again on a journaled ext4 (a loop image, as root: the board's
# SD card root; this machine's may have no journal, which costs a commit one disk wait more); READY
# time on a 1 GB database; and the GPS client's per-fix cost. The 1 Hz comparison is also counted
# in instructions (callgrind: user space only, whatever the host's speed; needs valgrind). The
# baseline's figures (f426fad) are printed beside this build's: stored in
# Benchmarks/baseline-f426fad.json, or measured live in the same run with BASELINE_BIN=DIR (a
# release build of f426fad: its `swift build --show-bin-path`).
BASELINE_BIN ?=
BENCH_FLAGS   = $(if $(BASELINE_BIN),--baseline-bin $(BASELINE_BIN))
bench: release test-deps
	@command -v valgrind >/dev/null || $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind
	@bin=$$($(SWIFT) build $(RELEASE_FLAGS) --show-bin-path); start=$$(date +%s); \
	echo "machine: $$(nproc) CPUs, $$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)," \
	  "$$(findmnt -n -o FSTYPE,SOURCE -T .)"; echo; \
	python3 Benchmarks/recording.py --bin $$bin $(BENCH_FLAGS) && echo && \
	python3 Benchmarks/device.py --bin $$bin $(BENCH_FLAGS) && echo && \
	python3 Benchmarks/device.py --bin $$bin --journaled-ext4 $(BENCH_FLAGS) && echo && \
	python3 Benchmarks/instructions.py --bin $$bin && echo && \
	python3 Benchmarks/ready.py --bin $$bin $(BENCH_FLAGS) && echo && \
	python3 Benchmarks/GPS/bench.py --bin $$bin && echo && \
	python3 Benchmarks/export.py --bin $$bin && echo && \
	python3 Benchmarks/web.py --bin $$bin && echo && \
	python3 Benchmarks/downloads.py --bin $$bin --plain && echo && \
	python3 Benchmarks/upload.py --bin $$bin && echo && \
	echo "BLE sensors (a heart-rate strap notifying at 1 Hz and a power meter at 4 Hz, each on its" && \
	echo "StrapSource behind a socketpair; Benchmarks/Strap/main.swift), 30 s:" && \
	$$bin/strap-bench 30 && echo && \
	echo "ANT+ sensors (a heart-rate strap and a power meter at their message rates, about 4 Hz each," && \
	echo "on one ANTStickSource behind a socketpair with a scripted stick; Benchmarks/ANT/main.swift), 30 s:" && \
	$$bin/ant-bench 30 && echo && \
	echo "The inertial sensor (a BMI160 at 100 Hz, 25 records a wake-up, on IMUSource behind a fake" && \
	echo "IIO tree with a FIFO for its node; Benchmarks/IMU/main.swift), 30 s:" && \
	$$bin/imu-bench 30 && \
	echo && echo "make bench: $$(( $$(date +%s) - start )) s"

# Makes $(ORDER_FILE) anew now, however new it is, and links the release build with it.
symbol-order: deps
	$(MAKE_ORDER)
	$(MAKE) --no-print-directory release

# INSTALL_BIN=DIR installs that directory's binaries instead of this machine's release build
# (the arm64 package's, cross-built by release-arm64).
INSTALL_BIN ?=
install: $(if $(INSTALL_BIN),,release)
	@bin=$(or $(INSTALL_BIN),$$($(SWIFT) build $(RELEASE_FLAGS) --show-bin-path)); \
	install -D -m 0755 $$bin/workoutd $(DESTDIR)$(BINDIR)/workoutd; \
	install -D -m 0755 $$bin/workoutctl $(DESTDIR)$(BINDIR)/workoutctl
	install -D -m 0644 systemd/workoutd.service $(DESTDIR)$(UNITDIR)/workoutd.service
	install -D -m 0644 systemd/workoutd.sysusers $(DESTDIR)$(SYSUSERSDIR)/workoutd.conf
	install -D -m 0644 systemd/workoutd.tmpfiles $(DESTDIR)$(TMPFILESDIR)/workoutd.conf
	install -D -m 0644 systemd/workoutd-usb@.service $(DESTDIR)$(UNITDIR)/workoutd-usb@.service
	install -D -m 0644 systemd/workoutd-usb-unusable@.service $(DESTDIR)$(UNITDIR)/workoutd-usb-unusable@.service
	install -D -m 0644 systemd/workoutd-usb-drive.service $(DESTDIR)$(UNITDIR)/workoutd-usb-drive.service
	install -D -m 0644 systemd/workoutd-usb-drive.path $(DESTDIR)$(UNITDIR)/workoutd-usb-drive.path
	install -D -m 0644 systemd/workoutd-poweroff.service $(DESTDIR)$(UNITDIR)/workoutd-poweroff.service
	install -D -m 0644 systemd/workoutd-poweroff.path $(DESTDIR)$(UNITDIR)/workoutd-poweroff.path
	install -D -m 0644 systemd/workoutd-upload.socket $(DESTDIR)$(UNITDIR)/workoutd-upload.socket
	install -D -m 0644 systemd/workoutd-upload@.service $(DESTDIR)$(UNITDIR)/workoutd-upload@.service
	install -D -m 0644 systemd/workoutd-imu@.service $(DESTDIR)$(UNITDIR)/workoutd-imu@.service
	install -D -m 0644 udev/60-workoutd.rules $(DESTDIR)$(UDEVRULESDIR)/60-workoutd.rules
	install -D -m 0644 udev/80-workoutd-usb.rules $(DESTDIR)$(UDEVRULESDIR)/80-workoutd-usb.rules
	@# The configuration is the administrator's: never overwrite an existing one.
	@if [ ! -e $(DESTDIR)$(SYSCONFDIR)/workoutd/workoutd.toml ]; then \
	  install -D -m 0644 board/workoutd.toml $(DESTDIR)$(SYSCONFDIR)/workoutd/workoutd.toml; fi
	install -d $(DESTDIR)$(DATADIR)/workoutd/rides
	install -m 0644 board/sim/rides/*.csv $(DESTDIR)$(DATADIR)/workoutd/rides/
	install -d $(DESTDIR)$(DATADIR)/workoutd/web
	install -m 0644 board/web/index.html board/web/app.js board/web/app.css board/web/icon.svg \
	  $(DESTDIR)$(DATADIR)/workoutd/web/
	install -D -m 0644 README.md $(DESTDIR)$(DOCDIR)/README.md
	@# Where the README's link finds it.
	install -D -m 0644 docs/ARCHITECTURE.md $(DESTDIR)$(DOCDIR)/docs/ARCHITECTURE.md
	install -D -m 0644 man/workoutd.1 $(DESTDIR)$(DATADIR)/man/man1/workoutd.1
	install -D -m 0644 man/workoutctl.1 $(DESTDIR)$(DATADIR)/man/man1/workoutctl.1

# The manual pages, made from the commands' own help by swift-argument-parser's plugin.
man: build
	$(SWIFT) package --allow-writing-to-package-directory generate-manual --configuration debug --output-directory man
	@# A blank line between a discussion's paragraphs is no mdoc (groff warns, and lintian:
	@# groff-message); .Pp is the paragraph break.
	sed -i 's/^$$/.Pp/' man/*.1

# The Debian package, for the host's architecture (amd64 here, arm64 on a Pi), built with
# dpkg-buildpackage and debhelper (debian/) from a copy of the tracked files as they are now;
# the .deb and lintian's verdict land in .build/deb/.
DEB_PACKAGES = debhelper dpkg-dev fakeroot lintian
# What building the package needs (a target of its own so that CI installs it before two
# package builds run side by side and race for dpkg's lock).
deb-deps: deps
	@missing=$$(for p in $(DEB_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; fi
	@# debian/control's Build-Depends (trixie keeps systemd.pc in systemd-dev).
	dpkg-checkbuilddeps >/dev/null 2>&1 || $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get build-dep -y -qq ./

# The copy has no .build: its release build links by this tree's order.
deb: deb-deps $(ORDER_FILE)
	@rm -rf .build/deb && mkdir -p .build/deb/workoutd
	git ls-files -z | xargs -0 tar -cf - | tar -xf - -C .build/deb/workoutd
	cd .build/deb/workoutd && ORDER_FILE=$(abspath $(ORDER_FILE)) dpkg-buildpackage -us -uc -b
	lintian --info --display-info .build/deb/workoutd_$$(cd .build/deb/workoutd && dpkg-parsechangelog -S Version)_*.deb \
	  | tee .build/deb/lintian.txt
	@ls -l .build/deb/*.deb

# arm64 (aarch64: the Raspberry Pi's), cross-built on this x86_64 machine with Debian's Swift
# (build-aux/cross-arm64.sh: Debian unstable's swiftlang, pinned there, against trixie's arm64
# libraries; both roots made once in /var/tmp/workoutd-arm64) and run here under qemu-user.
# The binaries link as release's do (static Swift standard library, lld, the same layout), with
# the sysroot's arm64 libstdc++.a. For trixie (Raspberry Pi OS 13) only: Debian's Swift 6.2
# runtime for arm64 needs glibc 2.38 (its C23 symbols) and bookworm has 2.36.
ARM64           = build-aux/cross-arm64.sh
ARM64_CACHE     = $(or $(WORKOUTD_ARM64_CACHE),/var/tmp/workoutd-arm64)
ARM64_SCRATCH   = .build-arm64
ARM64_BIN       = $(CURDIR)/$(ARM64_SCRATCH)/aarch64-unknown-linux-gnu
ARM64_CXX       = $(CURDIR)/$(ARM64_SCRATCH)/static-libstdc++
# The host's order, copied where the compiler's root sees it (it mounts this checkout only).
ARM64_ORDER     = $(CURDIR)/$(ARM64_SCRATCH)/workoutd.order
.PHONY: arm64-setup release-arm64 deb-arm64 bench-arm64 test-arm64 compare-arm64 test-board-arm64 test-board-arm64-smoke
arm64-setup:
	$(ARM64) setup

release-arm64: arm64-setup $(ORDER_FILE)
	@mkdir -p $(ARM64_CXX) && ln -sfn $$(ls $(ARM64_CACHE)/sysroot/usr/lib/gcc/aarch64-linux-gnu/*/libstdc++.a | tail -1) \
	  $(ARM64_CXX)/libstdc++.a
	@cmp -s $(ORDER_FILE) $(ARM64_ORDER) || cp $(ORDER_FILE) $(ARM64_ORDER)
	@for p in workoutd workoutctl; do [ ! $(ARM64_ORDER) -nt $(ARM64_BIN)/release/$$p ] || rm -f $(ARM64_BIN)/release/$$p; done
	$(ARM64) swift build $(RELEASE_FLAGS) --scratch-path $(ARM64_SCRATCH) --product workoutd $(LINK_FLAGS) \
	  -Xlinker -L$(ARM64_CXX) $(LAYOUT_FLAGS) $(call ORDER_FLAGS,$(ARM64_ORDER))
	$(ARM64) swift build $(RELEASE_FLAGS) --scratch-path $(ARM64_SCRATCH) --product workoutctl $(LINK_FLAGS) \
	  -Xlinker -L$(ARM64_CXX) $(LAYOUT_FLAGS) $(call ORDER_FLAGS,$(ARM64_ORDER))
	@file $(ARM64_BIN)/release/workoutd $(ARM64_BIN)/release/workoutctl

# workoutd_<version>_arm64.deb, for trixie: the package built with dpkg-buildpackage -aarm64 in
# the sysroot (trixie, arm64 libraries installed through multiarch, so dpkg-shlibdeps gives
# Depends from trixie's arm64 libraries) from the binaries release-arm64 made; lintian there.
deb-arm64: release-arm64
	@rm -rf .build/deb-arm64 && mkdir -p .build/deb-arm64/workoutd
	git ls-files -z | xargs -0 tar -cf - | tar -xf - -C .build/deb-arm64/workoutd
	$(ARM64) sysroot "cd $(CURDIR)/.build/deb-arm64/workoutd && WORKOUTD_BIN=$(ARM64_BIN)/release \
	  dpkg-buildpackage -aarm64 -d -us -uc -b"
	$(ARM64) sysroot "cd $(CURDIR)/.build/deb-arm64 && lintian --info --display-info workoutd_*_arm64.deb" \
	  | tee .build/deb-arm64/lintian.txt
	@dpkg-deb -I .build/deb-arm64/workoutd_*_arm64.deb | grep -E '^ (Package|Version|Architecture|Depends):'
	@ls -l .build/deb-arm64/*.deb

# The 1 Hz comparison with gpxlogger in instructions (make bench's instructions.py) on aarch64:
# the aarch64 release build and trixie's arm64 gpxlogger, and beside them the x86_64 ones, each
# under QEMU's user-mode emulator with a counting plugin (Benchmarks/instructions-arm64.py), then
# instructions.py's callgrind count of the x86_64 pair. Benchmarks/Instructions/setup.sh builds
# the plugin-enabled QEMU from Debian's source once (cache: /var/tmp/workoutd-qemu-plugins).
# Not part of `make test` or CI. Root (apt, the arm64 roots).
bench-arm64: release release-arm64 test-deps
	@command -v valgrind >/dev/null || $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq valgrind
	@start=$$(date +%s); bin=$$($(SWIFT) build $(RELEASE_FLAGS) --show-bin-path); \
	args=$$(Benchmarks/Instructions/setup.sh) && echo "setup: $$(( $$(date +%s) - start )) s" && echo && \
	python3 Benchmarks/instructions-arm64.py $$args --x86-bin $$bin --arm64-bin $(ARM64_BIN)/release \
	  --sysroot $(ARM64_CACHE)/sysroot && echo && \
	python3 Benchmarks/instructions.py --bin $$bin && \
	echo && echo "make bench-arm64: $$(( $$(date +%s) - start )) s (and the builds before)"

# The test suite built for aarch64 and run here under qemu-user (binfmt_misc: the aarch64
# programs the tests start, workoutd and workoutctl among them, run under it too; gpsd, Python
# and the reference decoders are this machine's), then Tests/CrossCPU/compare.py: every bundled
# ride recorded by the x86_64 build and by the aarch64 release build, databases and exports
# compared. WORKOUTD_TEST_QEMU_USER tells the three checks whose subject qemu-user does not
# emulate: /proc/self/smaps (ProcessMemory's page release: the emulator's own process is
# shown) and posix_spawn's report of a failed exec (through the vfork'd child's memory).
test-arm64: build decoders release-arm64
	$(ARM64) swift build --build-tests --scratch-path $(ARM64_SCRATCH)
	WORKOUTD_TEST_QEMU_USER=1 $(ARM64) run $(ARM64_BIN)/debug/workoutdPackageTests.xctest --testing-library swift-testing
	$(MAKE) --no-print-directory compare-arm64

# The comparison alone (CI's: a few minutes once the aarch64 release build is there).
compare-arm64: build decoders release-arm64
	python3 Tests/CrossCPU/compare.py --x86 $$($(SWIFT) build --show-bin-path) --arm64 $(ARM64_BIN)/release \
	  --run-arm64 "$(ARM64) run"

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/workoutd $(DESTDIR)$(BINDIR)/workoutctl \
	  $(DESTDIR)$(UNITDIR)/workoutd.service $(DESTDIR)$(SYSUSERSDIR)/workoutd.conf \
	  $(DESTDIR)$(TMPFILESDIR)/workoutd.conf $(DESTDIR)$(UDEVRULESDIR)/60-workoutd.rules \
	  $(DESTDIR)$(UNITDIR)/workoutd-usb@.service $(DESTDIR)$(UDEVRULESDIR)/80-workoutd-usb.rules \
	  $(DESTDIR)$(UNITDIR)/workoutd-usb-unusable@.service \
	  $(DESTDIR)$(UNITDIR)/workoutd-usb-drive.service $(DESTDIR)$(UNITDIR)/workoutd-usb-drive.path \
	  $(DESTDIR)$(UNITDIR)/workoutd-poweroff.service $(DESTDIR)$(UNITDIR)/workoutd-poweroff.path \
	  $(DESTDIR)$(UNITDIR)/workoutd-upload.socket $(DESTDIR)$(UNITDIR)/workoutd-upload@.service \
	  $(DESTDIR)$(UNITDIR)/workoutd-imu@.service \
	  $(DESTDIR)$(DOCDIR)/README.md $(DESTDIR)$(DOCDIR)/docs/ARCHITECTURE.md $(DESTDIR)$(DATADIR)/man/man1/workoutd.1 \
	  $(DESTDIR)$(DATADIR)/man/man1/workoutctl.1
	rm -rf $(DESTDIR)$(DATADIR)/workoutd
	@echo "kept $(SYSCONFDIR)/workoutd/workoutd.toml and /var/lib/workoutd (your rides)"

# The board-VM suite: the service installed from its Debian package, under systemd on a
# simulated board (QEMU): Debian 12 bookworm's kernel and userland, or Debian 13 trixie's.
test-board:
	Tests/BoardVM/run-suite.sh

test-board-trixie:
	BOARD_VM_RELEASE=trixie Tests/BoardVM/run-suite.sh

# The board-VM suite on an arm64 board: the arm64 package (deb-arm64) on Debian 13 trixie's arm64
# kernel and userland under qemu-system-aarch64 -M virt (Cortex-A72, software emulation), the
# board's devices as on x86_64 (gpio-sim, i2c-stub and hci_vhci built for that kernel).
# Cache: /var/tmp/workoutd-board-vm-trixie-arm64.
BOARD_ARM64 = BOARD_VM_RELEASE=trixie BOARD_VM_ARCH=arm64 BOARD_VM_DEB=$$(ls $(CURDIR)/.build/deb-arm64/workoutd_*_arm64.deb | tail -1)
test-board-arm64: deb-arm64
	$(BOARD_ARM64) Tests/BoardVM/run-suite.sh

# Its smoke subset (CI's): boot, GPS, buttons, barometer; the package installed by apt in the
# image, the service started by systemd at boot, a ride recorded, kill -9 survived; 2 power cuts.
ARM64_SMOKE_TESTS = 10-boot-multi-user 20-gpsd-fixes 30-gpio-buttons 40-i2c-bmp280 \
  60-workoutd-service 61-workoutd-records 63-workoutd-kill9
# ARM64_DEB= takes the package an earlier deb-arm64 left in .build/deb-arm64 as it is.
ARM64_DEB ?= deb-arm64
test-board-arm64-smoke: $(ARM64_DEB)
	$(BOARD_ARM64) BOARD_VM_TESTS="$(ARM64_SMOKE_TESTS)" POWER_CUTS=2 UPLOAD_CUT=0 Tests/BoardVM/run-suite.sh

clean:
	rm -rf .build .run
