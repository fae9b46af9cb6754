# surecron - one Makefile (GNU make + pkg-config).
#
#   make              build build/surecron
#   make deps         install the missing Debian packages (deps-test and
#                     deps-bench: also those of the tests and benchmarks)
#   make test         build with failpoints and run every test suite
#   make test SAN=1   the same under AddressSanitizer + UBSan (build/san)
#   make test TSAN=1  the same under ThreadSanitizer (build/tsan)
#   make test-release the store, queue and daemon suites against a
#                     release-like build (build/rel), on both backends
#   make tsan         the threaded suites only (daemon, HTTP, ...) under TSan
#   make soak         the long runs (SURECRON_SOAK_SECONDS, default 3600)
#   make bench        benchmarks, with the peers named in the issues
#   make budget       instruction budgets under callgrind (bench/budgets.txt)
#   make lint         cppcheck and clang-tidy
#   make valgrind     the CLI's main paths under valgrind
#   make example      build and run surecron on examples/surecron.yaml
#   make man          regenerate the troff man pages (needs pandoc)
#   make install      install the binary, man pages, completion and the
#                     example config and unit under PREFIX (DESTDIR,
#                     BINDIR, MANDIR, DATADIR, DOCDIR as usual)
#   make uninstall    remove what make install put there
#   make fuzz         each fuzz target under libFuzzer (fuzz/fuzz.mk)
#
# Public targets first check that the Debian packages are present (quiet
# when they are; otherwise they name what is missing and `make deps`, and
# stop: make itself never runs apt-get), then re-enter make for the real
# work, so pkg-config is only asked once the libraries exist.

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
DATADIR ?= $(PREFIX)/share
MANDIR ?= $(DATADIR)/man
DOCDIR ?= $(DATADIR)/doc/surecron
BASHCOMPDIR ?= $(DATADIR)/bash-completion/completions
SAN ?= 0
PKGS := sqlite3 libpq libcurl jansson yaml-0.1 libmicrohttpd libcrypto
SUBMAKE = $(MAKE) --no-print-directory -f Makefile

.PHONY: all test check asan bench lint example install uninstall clean deps \
	deps-test deps-bench need need-test need-bench _all _test _bench soak \
	man valgrind tsan _tsan test-release _test_release budget _budget

all: need
	@$(SUBMAKE) _all MODE=release

deps:
	@sh scripts/install-deps.sh build
deps-test:
	@sh scripts/install-deps.sh test
deps-bench:
	@sh scripts/install-deps.sh bench
need:
	@sh scripts/install-deps.sh --check build
need-test:
	@sh scripts/install-deps.sh --check test
need-bench:
	@sh scripts/install-deps.sh --check bench

ifeq ($(SAN),1)
TESTMODE := san
else ifeq ($(TSAN),1)
TESTMODE := tsan
else
TESTMODE := test
endif

test check: need-test
	@$(SUBMAKE) _test MODE=$(TESTMODE)
asan:
	@$(MAKE) --no-print-directory test SAN=1

# make soak: the long crash loop (test_crash, 3000 kills) and test_soak,
# two daemons for SURECRON_SOAK_SECONDS (default 3600) under kills,
# PostgreSQL restarts and a receiver that misbehaves; each binary may take
# that long plus 20 minutes. Not in CI.
soak: need-test
	@SURECRON_TEST_TIMEOUT=$$(( $${SURECRON_SOAK_SECONDS:-3600} + 1200 )) \
		$(SUBMAKE) _test MODE=test SURECRON_SOAK=1

# ---- ThreadSanitizer (issue 10) ---------------------------------------
# `make tsan`: the suites that run threads (the daemon's scheduler,
# worker and watcher threads; the HTTP client's single-flight token
# refresh; the fake receiver's per-connection threads) under TSan, in
# build/tsan. `make test TSAN=1` runs every suite that way. TSan needs a
# fixed memory layout on kernels with vm.mmap_rnd_bits > 28, so the run
# goes through `setarch -R` (no ASLR) when setarch is there.
TSAN_SUITES ?= test_daemon test_http test_nodes_daemon_pg test_pg_faults \
	test_secrets test_delivery test_orchestrator test_slot_e2e \
	test_delivery_crash test_task test_tz test_target_file test_alerts \
	test_notice_policy test_heartbeat test_heartbeat_unit test_sdnotify \
	test_sla test_sla_daemon test_sched_plan_daemon test_include_reload \
	test_config_include \
	test_group_commit \
	test_web_daemon test_prometheus test_web_api test_web_page \
	test_timing_daemon test_overlap_daemon test_pause_daemon \
	test_status_socket test_status_socket_daemon
tsan: need-test
	@$(SUBMAKE) _tsan MODE=tsan

# ---- release-like build (issue 12) ----------------------------------
# `make test-release`: the suites below built as a release is (-O2, no
# -DSURECRON_FAILPOINTS, no -DSURECRON_DEBUG) in build/rel, and run on
# SQLite and on the PostgreSQL of tests/pg_server.sh, so the SQL and the
# code paths that ship are the ones tested. A test that needs a test
# build's seams (failpoints, SURECRON_TEST_CLOCK) skips there with its
# reason (TU_NEED_TEST_SEAMS in tests/testutil.h); the rest really run.
REL_SUITES ?= test_store test_store_pg test_queue test_nodes_pg test_daemon \
	test_store_alert test_alerts test_sla test_audit test_ledger_query test_prune \
	test_sched_plan test_ledger_bulk test_web_daemon test_prometheus \
	test_web_api test_web_page test_timing test_timing_daemon test_overlap_daemon test_pause_daemon \
	test_status_socket test_status_socket_daemon
test-release: need-test
	@$(SUBMAKE) _test_release MODE=rel

bench: need-bench
	@$(SUBMAKE) _bench MODE=release

example: all
	@sh scripts/run-example.sh build/surecron

lint: need-test
	@$(SUBMAKE) _lint MODE=test

# The CLI's main paths under valgrind memcheck (no leaks, no bad access).
valgrind: all need-test
	@sh tests/valgrind.sh build/surecron

# The troff pages are generated from docs/man/*.md and committed, so that
# `make install` needs no pandoc.
man:
	@if command -v pandoc >/dev/null 2>&1; then \
		for f in docs/man/*.md; do \
			pandoc -s -f markdown -t man "$$f" -o "$${f%.md}" || exit 1; \
			echo "$${f%.md}"; \
		done; \
	else echo "make man: pandoc not found (apt-get install pandoc);" \
		"the committed pages are unchanged"; fi

# ---------------------------------------------------------------------
# Everything below runs with MODE set by the public targets above.

MODE ?= release
ifeq ($(MODE),release)
B := build
MODEFLAGS := -O2 -g
else ifeq ($(MODE),rel)
B := build/rel
MODEFLAGS := -O2 -g
else ifeq ($(MODE),test)
B := build/test
MODEFLAGS := -O1 -g -DSURECRON_FAILPOINTS -DSURECRON_DEBUG
else ifeq ($(MODE),san)
B := build/san
MODEFLAGS := -O1 -g -DSURECRON_FAILPOINTS -DSURECRON_DEBUG \
	-fsanitize=address,undefined -fno-sanitize-recover=undefined \
	-fno-omit-frame-pointer
SANLDFLAGS := -fsanitize=address,undefined
else ifeq ($(MODE),tsan)
B := build/tsan
MODEFLAGS := -O1 -g -DSURECRON_FAILPOINTS -DSURECRON_DEBUG -fsanitize=thread \
	-fno-omit-frame-pointer
SANLDFLAGS := -fsanitize=thread
endif

ifneq ($(filter _%,$(MAKECMDGOALS)),)
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS))
PKG_LIBS := $(shell pkg-config --libs $(PKGS))
CMOCKA_LIBS := $(shell pkg-config --libs cmocka 2>/dev/null)
# The binary does not link libcurl, libpq, libcrypto nor libmicrohttpd:
# src/lazylib.c dlopens them on first use (their headers still come from
# PKG_CFLAGS), so a daemon on SQLite never maps them and their ~30
# dependencies. libcrypto is for the targets that send an idempotency key
# or a signature (webhook, slack, command), never for a file target;
# libmicrohttpd (and gnutls behind it) for the daemon's web surface only
# (src/web/), so a command starts without them. Tests and benchmarks
# keep PKG_LIBS (they call libpq and libmicrohttpd themselves). dlopen is
# in glibc's libc since 2.34.
BIN_LIBS := $(shell pkg-config --libs sqlite3 jansson yaml-0.1) -ldl
endif

CC ?= gcc
WARN := -std=c11 -Wall -Wextra -Werror -Wformat=2 -Wmissing-prototypes \
	-Wstrict-prototypes -Wshadow -Wno-unused-parameter
CPPFLAGS_ALL := -D_GNU_SOURCE -Iinclude -Isrc $(PKG_CFLAGS)
CFLAGS_ALL := $(WARN) $(MODEFLAGS) -fvisibility=hidden -pthread -MMD -MP $(CFLAGS)
LDLIBS_ALL := $(PKG_LIBS) -pthread -lm $(LDLIBS)
LDFLAGS_ALL := $(SANLDFLAGS) $(LDFLAGS)

LIB_SRC := $(sort $(wildcard src/*.c src/web/*.c))
CLI_SRC := $(sort $(wildcard src/cli/*.c))
FAKE_SRC := $(sort $(wildcard tests/fakes/*.c))
UNIT_SRC := $(sort $(wildcard tests/unit/test_*.c))
INTEG_SRC := $(sort $(wildcard tests/integ/test_*.c))
BENCH_SRC := $(sort $(wildcard bench/bench_*.c))

LIB_OBJ := $(LIB_SRC:%.c=$(B)/obj/%.o)
# The dashboard's HTML, CSS and JavaScript (src/web/assets/), turned into a C
# file of the build directory by scripts/embed.sh and linked into the
# library, so the page works on a host with no network (issue 16).
WEB_FILES := $(sort $(wildcard src/web/assets/*.html src/web/assets/*.css \
	src/web/assets/*.js src/web/assets/*.svg))
WEB_GEN := $(B)/gen/web_assets.c
LIB_OBJ += $(B)/obj/gen/web_assets.o
CLI_OBJ := $(CLI_SRC:%.c=$(B)/obj/%.o)
FAKE_OBJ := $(FAKE_SRC:%.c=$(B)/obj/%.o)
LIB := $(B)/libsurecron.a
FAKELIB := $(B)/libfakes.a
BIN := $(B)/surecron
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(B)/tests/%)
INTEG_BIN := $(INTEG_SRC:tests/integ/%.c=$(B)/tests/%)
BENCH_BIN := $(BENCH_SRC:bench/%.c=$(B)/bench/%)

# The fuzz targets: `make fuzz`, and their corpus replay in `make test`
# (adds the replay binaries to UNIT_BIN). Self-contained in fuzz/fuzz.mk.
include fuzz/fuzz.mk

_all: $(BIN)

$(B)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS_ALL) $(CFLAGS_ALL) -c $< -o $@

$(WEB_GEN): $(WEB_FILES) scripts/embed.sh
	@mkdir -p $(dir $@)
	sh scripts/embed.sh $@ $(WEB_FILES)

$(B)/obj/gen/web_assets.o: $(WEB_GEN)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS_ALL) $(CFLAGS_ALL) -c $< -o $@

$(LIB): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(FAKELIB): $(FAKE_OBJ) | $(LIB)
	@rm -f $@
	@if [ -n "$(FAKE_OBJ)" ]; then ar rcs $@ $(FAKE_OBJ); else ar rcs $@; fi

$(BIN): $(CLI_OBJ) $(LIB)
	$(CC) $(LDFLAGS_ALL) -o $@ $(CLI_OBJ) $(LIB) $(BIN_LIBS) -pthread -lm \
		$(LDLIBS)

# test_alloc_fail counts and fails the allocations of the library's own
# objects: the linker sends their malloc/calloc/realloc/strdup/strndup
# calls to the test's __wrap_ functions.
$(B)/tests/test_alloc_fail: LDFLAGS_ALL += -Wl,--wrap=malloc,--wrap=calloc \
	-Wl,--wrap=realloc,--wrap=strdup,--wrap=strndup

$(B)/tests/%: tests/unit/%.c $(LIB) $(FAKELIB)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS_ALL) -Itests $(CFLAGS_ALL) $(LDFLAGS_ALL) -o $@ $< \
		$(FAKELIB) $(LIB) $(CMOCKA_LIBS) $(LDLIBS_ALL)

$(B)/tests/%: tests/integ/%.c $(LIB) $(FAKELIB)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS_ALL) -Itests $(CFLAGS_ALL) $(LDFLAGS_ALL) -o $@ $< \
		$(FAKELIB) $(LIB) $(CMOCKA_LIBS) $(LDLIBS_ALL)

$(B)/bench/%: bench/%.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS_ALL) $(CFLAGS_ALL) $(LDFLAGS_ALL) -o $@ $< $(LIB) \
		$(LDLIBS_ALL)

# tests/pg_server.sh run: a throw-away PostgreSQL for the whole run, so
# the store suites run on both backends (SURECRON_TEST_PG).
# The dashboard in headless chromium (tests/browser/, issue 16) runs as
# one more suite: its summary joins the total, and it is skipped when
# chromium or its node modules are absent. SURECRON_TEST_FILTER=test_browser
# runs it alone.
BROWSER_SUITE := $(abspath tests/browser/test_browser.sh)
# The protocol model (model/protocol.pml, docs/internals/model.md) checked
# by spin, the model and its mutants, in a few seconds: one more suite,
# skipped without spin. SURECRON_TEST_FILTER=check.sh runs it alone.
MODEL_SUITE := $(abspath model/check.sh)
_test: $(BIN) $(UNIT_BIN) $(INTEG_BIN)
ifeq ($(MODE),tsan)
	@$(TSAN_ENV) sh tests/tsan.sh $(abspath $(B))/tsan-reports \
		$(UNIT_BIN) $(INTEG_BIN)
else
	@SURECRON_BIN=$(abspath $(BIN)) SURECRON_BUILD=$(abspath $(B)) \
		SURECRON_SAN=$(filter san,$(MODE)) SC_PG_FSYNC=off \
		sh tests/pg_server.sh run bash tests/run.sh $(UNIT_BIN) $(INTEG_BIN) \
		$(BROWSER_SUITE) $(MODEL_SUITE)
endif

# TSan runs are judged by their reports (tests/tsan.sh says why).
TSAN_BIN := $(filter $(addprefix $(B)/tests/,$(TSAN_SUITES)),$(UNIT_BIN) $(INTEG_BIN))
TSAN_ENV = SURECRON_BIN=$(abspath $(BIN)) SURECRON_BUILD=$(abspath $(B)) \
	SURECRON_SAN=tsan SC_PG_FSYNC=off
_tsan: $(BIN) $(TSAN_BIN)
	@$(TSAN_ENV) sh tests/tsan.sh $(abspath $(B))/tsan-reports $(TSAN_BIN)

REL_BIN := $(filter $(addprefix $(B)/tests/,$(REL_SUITES)),$(UNIT_BIN) $(INTEG_BIN))
_test_release: $(BIN) $(REL_BIN)
	@SURECRON_BIN=$(abspath $(BIN)) SURECRON_BUILD=$(abspath $(B)) \
		SC_PG_FSYNC=off \
		sh tests/pg_server.sh run bash tests/run.sh $(REL_BIN)

# Instruction counts, not times: CI checks them (bench/budget.sh says why).
budget: need
	@$(SUBMAKE) _budget MODE=release
_budget: $(BIN) $(B)/bench/bench_queue $(B)/bench/bench_cron \
		$(B)/bench/bench_claim_known
	@sh bench/budget.sh $(B)

_bench: $(BIN) $(BENCH_BIN)
	@SURECRON_BIN=$(abspath $(BIN)) SURECRON_BUILD=$(abspath $(B)) \
		sh bench/run.sh $(BENCH_BIN)

# The prefix rule reads the symbol tables of the test build's objects.
_lint: $(LIB_OBJ) $(CLI_OBJ)
	sh scripts/check-prefix.sh $(B)/obj/src
	sh scripts/lint.sh

# What `make install` puts where; `make uninstall` removes the same list.
INSTALLED := $(BINDIR)/surecron $(MANDIR)/man1/surecron.1 \
	$(MANDIR)/man1/surecron-prune.1 \
	$(MANDIR)/man5/surecron.yaml.5 $(BASHCOMPDIR)/surecron \
	$(DOCDIR)/README.md $(DOCDIR)/examples/surecron.yaml \
	$(DOCDIR)/examples/team.yaml $(DOCDIR)/examples/surecron.service \
	$(DOCDIR)/examples/prometheus-rules.yml \
	$(addprefix $(DOCDIR)/,$(wildcard examples/tasks/*))

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man1 \
		$(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(BASHCOMPDIR) \
		$(DESTDIR)$(DOCDIR)/examples/tasks
	install -m 0755 build/surecron $(DESTDIR)$(BINDIR)/surecron
	install -m 0644 docs/man/surecron.1 docs/man/surecron-prune.1 \
		$(DESTDIR)$(MANDIR)/man1/
	install -m 0644 docs/man/surecron.yaml.5 $(DESTDIR)$(MANDIR)/man5/
	install -m 0644 completion/surecron.bash \
		$(DESTDIR)$(BASHCOMPDIR)/surecron
	install -m 0644 README.md $(DESTDIR)$(DOCDIR)/
	install -m 0644 examples/surecron.yaml examples/team.yaml \
		examples/surecron.service examples/prometheus-rules.yml \
		$(DESTDIR)$(DOCDIR)/examples/
	install -m 0755 $(wildcard examples/tasks/*) \
		$(DESTDIR)$(DOCDIR)/examples/tasks/

uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	@for d in $(DOCDIR)/examples/tasks $(DOCDIR)/examples $(DOCDIR) \
		$(BASHCOMPDIR); do rmdir "$(DESTDIR)$$d" 2>/dev/null || true; done

clean:
	rm -rf build

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(FAKE_OBJ:.o=.d)
