# pepsi — build, test, run, bench, install.
#
#   make            build build/pepsi-runner, build/pepsi-stage (the built-in
#                   stages alone) and its pepsi-stage-* links, and
#                   libpepsi-worker (.a, .so.0) for C stage programs of their own
#   make test       fast C unit tests, no database; also replays every fuzz
#                   corpus and regression input (runner/fuzz/) once
#   make check      everything CI runs: unit tests, the migration chain and
#                   pgTAP, end-to-end tests against a real PostgreSQL
#                   (installs the packages it needs first: scripts/deps)
#   make run        a local cluster in .pepsi/, schema deployed, the runner
#                   driving the example pipeline (conf/example.conf); installs
#                   the packages it needs first (scripts/deps)
#   make bench      benchmarks, one JSON object per line
#   make deploy / revert   sqitch against the local cluster of `make run`
#   make lint       cppcheck, shell syntax, generated files up to date, the
#                   runner's include directions (scripts/check-includes), status
#                   updates only in the state machine (scripts/lint-state-machine),
#                   array literals built only by lib/pgarray (scripts/lint-arrays),
#                   deploy/config_keys.sql and the README's key table from the
#                   runner's key table (scripts/check-conf-keys)
#   make install    PREFIX=/usr/local, DESTDIR honoured: the runner, the
#                   schema, the configuration (0640 root:pepsi, never
#                   overwritten), the systemd units, the sysusers.d file of
#                   the pepsi user (applied with systemd-sysusers when root
#                   and no DESTDIR), the man pages, the README, and
#                   libpepsi-worker with pepsi-worker.h and pepsi-worker.pc
#   make uninstall  removes what install put, except the configuration and
#                   the pepsi user and group (data an operator owns)
#   make SANITIZE=1 ...    the same with ASan and UBSan (in build-asan/)
#   make fuzz       every libFuzzer target runner/fuzz/fuzz_NAME.c, built with
#                   clang, ASan and UBSan in build-fuzz/, FUZZ_TIME seconds
#                   each (default 60); FUZZ_TARGETS=a,b picks (scripts/fuzz)

PREFIX   ?= /usr/local
BINDIR   ?= $(PREFIX)/bin
SHAREDIR ?= $(PREFIX)/share/pepsi
LIBDIR   ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
SYSCONFDIR ?= /etc
UNITDIR  ?= /lib/systemd/system
# systemd reads sysusers.d from /usr/lib (and /etc, /run), whatever PREFIX.
SYSUSERSDIR ?= /usr/lib/sysusers.d
MANDIR   ?= $(PREFIX)/share/man
DOCDIR   ?= $(PREFIX)/share/doc/pepsi

CC       ?= cc
PKGS     := libpq libuv jansson inih libsystemd libcurl openssl libmicrohttpd libpcre2-8
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

WARN     := -Wall -Wextra -Wformat=2 -Wshadow -Werror
CFLAGS   ?= -O2 -g
ifeq ($(SANITIZE),1)
BUILD    ?= build-asan
CFLAGS   += -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
LDFLAGS  += -fsanitize=address,undefined
else
BUILD    ?= build
endif
ALL_CFLAGS := -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) $(PKG_CFLAGS) -Irunner/src -I$(BUILD)

SRC_MAIN := runner/src/main.c
SRC_STAGE_MAIN := runner/src/stage_main.c
SRC_LIB  := $(filter-out $(SRC_MAIN) $(SRC_STAGE_MAIN),$(wildcard runner/src/*.c runner/src/*/*.c))
OBJ_LIB  := $(SRC_LIB:%.c=$(BUILD)/%.o)
OBJ_MAIN := $(SRC_MAIN:%.c=$(BUILD)/%.o)
TESTS    := $(patsubst runner/tests/%.c,$(BUILD)/tests/%,$(wildcard runner/tests/test_*.c))
STAGES   := pass exec discard http if edit-settings
VERSION  := $(shell sed -n 's/^\#define PEPSI_VERSION "\(.*\)"/\1/p' runner/src/main.c)

# libpepsi-worker (issue 13): the SDK (runner/src/sdk/) and the lib/ objects
# it uses, nothing of dispatch/, ingress/, cli/ or stages/ (make lint checks:
# scripts/check-sdklib). Built once position-independent into $(BUILD)/pic/:
# every SDK object, linked (ld -r) with an archive of lib/'s, from which the
# linker takes only the objects the SDK needs (today conf, conn, log,
# overlay, pgerr, pgpass, proto, schema, util), into one relocatable object
# whose only global symbols are those listed in
# runner/src/sdk/libpepsi-worker.sym (the functions of the public header,
# runner/src/sdk/pepsi-worker.h), so that neither the static nor the shared
# library lends a stage program names such as log_msg or xmalloc.
SDKLIB_OBJ := $(patsubst %.c,$(BUILD)/pic/%.o,$(wildcard runner/src/sdk/*.c))
SDKLIB_LIBOBJ := $(patsubst %.c,$(BUILD)/pic/%.o,$(wildcard runner/src/lib/*.c))
SDKLIB_SYMS := runner/src/sdk/libpepsi-worker.sym
SDKLIB_PKGS := libpq inih libcurl
# What a program linking libpepsi-worker.a needs besides (the .pc's
# Libs.private): those libraries' shared forms, not their own static
# dependencies (libpq's -lpgcommon -lpgport are not in libpq-dev).
SDKLIB_PRIVATE = $(shell pkg-config --libs $(SDKLIB_PKGS) 2>/dev/null)
SDKLIB_SONAME := libpepsi-worker.so.0
SDKLIB   := $(BUILD)/libpepsi-worker.a $(BUILD)/$(SDKLIB_SONAME)

# Fuzzing (issue 11): each runner/fuzz/fuzz_NAME.c is one libFuzzer target
# with its seed corpus in runner/fuzz/corpus/NAME/ and the crash inputs it
# once failed on in runner/fuzz/regressions/NAME/. `make test` builds, with
# the normal compiler, replay_NAME (the target plus runner/fuzz/replay.c)
# and feeds it both directories once; `make fuzz` builds the targets with
# clang and libFuzzer into build-fuzz/ and runs them (scripts/fuzz).
FUZZ_NAMES := $(patsubst runner/fuzz/fuzz_%.c,%,$(wildcard runner/fuzz/fuzz_*.c))
REPLAYS  := $(FUZZ_NAMES:%=$(BUILD)/fuzz/replay_%)
FUZZERS  := $(FUZZ_NAMES:%=$(BUILD)/fuzz/fuzz_%)
FUZZ_BUILD := build-fuzz
FUZZ_CC  ?= clang
FUZZ_TIME ?= 60
FUZZ_TARGETS ?=
FUZZ_SANITIZE := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
RUNNER   := $(BUILD)/pepsi-runner

# pepsi-stage (issue 19): the built-in stages as a program of their own,
# which every pepsi-stage-NAME links to. stages/, sdk/ and an archive of
# lib/'s objects, from which the linker takes only those they use, linked
# --as-needed with the libraries those need: not the runner's libuv,
# libmicrohttpd or libsystemd (libcrypto: the http stage signs; make lint checks the
# NEEDED list: scripts/check-stage-libs).
STAGE_BIN  := $(BUILD)/pepsi-stage
STAGE_PKGS := libpq jansson inih libcurl libpcre2-8 libcrypto
STAGE_OBJ  := $(patsubst %.c,$(BUILD)/%.o,$(SRC_STAGE_MAIN) $(wildcard runner/src/stages/*.c runner/src/sdk/*.c))

.PHONY: all test check check-unit check-sql check-e2e run deploy revert bench lint install uninstall clean valgrind \
	fuzz fuzz-build

all: $(RUNNER) $(STAGE_BIN) $(STAGES:%=$(BUILD)/pepsi-stage-%) $(SDKLIB)

# The schema API level this build is made for (the last change of
# sqitch.plan that defines pepsi.schema_api(): deploy/schema_api.sql or a
# later one, issue 16), compared with pepsi.schema_api() at start-up (D-12,
# issue 15).
$(BUILD)/schema_build.h: sqitch.plan $(wildcard deploy/*.sql) scripts/schema-manifest
	@mkdir -p $(@D)
	scripts/schema-manifest > $@.tmp && mv $@.tmp $@

$(BUILD)/%.o: %.c $(wildcard runner/src/*.h runner/src/*/*.h)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

# Only the schema check needs the level; a new level rebuilds it alone.
$(BUILD)/runner/src/lib/schema.o: $(BUILD)/schema_build.h

$(BUILD)/pic/%.o: %.c $(wildcard runner/src/*.h runner/src/*/*.h)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -fPIC -c -o $@ $<

$(BUILD)/pic/runner/src/lib/schema.o: $(BUILD)/schema_build.h

$(BUILD)/pic/liblib.a: $(SDKLIB_LIBOBJ)
	rm -f $@
	$(AR) rcs $@ $^

$(BUILD)/libpepsi-worker.o: $(SDKLIB_OBJ) $(BUILD)/pic/liblib.a $(SDKLIB_SYMS)
	$(LD) -r -o $@.tmp $(SDKLIB_OBJ) $(BUILD)/pic/liblib.a
	objcopy --keep-global-symbols=$(SDKLIB_SYMS) $@.tmp $@
	rm -f $@.tmp

$(BUILD)/libpepsi-worker.a: $(BUILD)/libpepsi-worker.o
	rm -f $@
	$(AR) rcs $@ $<

# --no-undefined: the library names every library it needs (its NEEDED).
$(BUILD)/$(SDKLIB_SONAME): $(BUILD)/libpepsi-worker.o
	$(CC) -shared $(LDFLAGS) -Wl,-soname,$(SDKLIB_SONAME) -Wl,--no-undefined -o $@ $< \
		$(shell pkg-config --libs jansson $(SDKLIB_PKGS) 2>/dev/null)

$(RUNNER): $(OBJ_MAIN) $(OBJ_LIB)
	$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)

$(BUILD)/liblib.a: $(patsubst %.c,$(BUILD)/%.o,$(wildcard runner/src/lib/*.c))
	rm -f $@
	$(AR) rcs $@ $^

$(STAGE_BIN): $(STAGE_OBJ) $(BUILD)/liblib.a
	$(CC) $(LDFLAGS) -Wl,--as-needed -o $@ $^ $(shell pkg-config --libs $(STAGE_PKGS) 2>/dev/null)

$(BUILD)/pepsi-stage-%: $(STAGE_BIN)
	ln -sf pepsi-stage $@

$(BUILD)/tests/%: runner/tests/%.c $(OBJ_LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)

$(BUILD)/fuzz/replay_%: runner/fuzz/fuzz_%.c runner/fuzz/replay.c $(OBJ_LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -DFUZZ_NAME='"$*"' $(LDFLAGS) -o $@ $^ $(PKG_LIBS)

test check-unit: $(TESTS) $(REPLAYS)
	@scripts/run-unit-tests $(TESTS) $(REPLAYS)
	/usr/bin/python3 sdk/python/test_pepsi_worker.py

# The library objects get libFuzzer's coverage hooks (fuzzer-no-link), the
# target its main (fuzzer); a sub-make builds them into build-fuzz/. clang
# warns where gcc, the compiler -Werror is kept for, does not: its warnings
# are shown but do not stop the fuzz build.
$(BUILD)/fuzz/fuzz_%: runner/fuzz/fuzz_%.c $(OBJ_LIB)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -fsanitize=fuzzer $(LDFLAGS) -o $@ $^ $(PKG_LIBS)

fuzz-build: $(FUZZERS)

fuzz:
	$(MAKE) BUILD=$(FUZZ_BUILD) CC=$(FUZZ_CC) SANITIZE= \
		CFLAGS='-O1 -g -Wno-error $(FUZZ_SANITIZE) -fsanitize=fuzzer-no-link' \
		LDFLAGS='$(FUZZ_SANITIZE)' fuzz-build
	FUZZ_TIME=$(FUZZ_TIME) FUZZ_TARGETS=$(FUZZ_TARGETS) scripts/fuzz $(FUZZ_BUILD) $(FUZZ_NAMES)

# The router database's project (router/, issue 18) has its own chain and suites.
check-sql:
	scripts/test-sql
	scripts/test-router

# 62-pgarray.t runs the unit test test_pgarray against its database.
check-e2e: all $(BUILD)/tests/test_pgarray
	PEPSI_BUILD=$(BUILD) scripts/test-e2e

# `make check` and `make run` install the packages they need first, as the
# README says (scripts/deps: quick when all are there; needs root or sudo
# only when one is missing). The build then runs in a sub-make, so that
# the pkg-config flags above are read after the -dev packages are in.
# `make` alone installs nothing.
check:
	scripts/deps
	$(MAKE) check-unit check-sql check-e2e

valgrind: all $(TESTS) $(REPLAYS)
	PEPSI_VALGRIND=1 scripts/run-unit-tests $(TESTS) $(REPLAYS)
	PEPSI_BUILD=$(BUILD) PEPSI_VALGRIND=1 scripts/test-e2e

run:
	scripts/deps
	$(MAKE) all
	scripts/run

deploy:
	scripts/local-sqitch deploy

revert:
	scripts/local-sqitch revert -y

bench: all
	PEPSI_BUILD=$(BUILD) bench/run

lint: all
	cppcheck --quiet --inline-suppr --error-exitcode=1 --enable=warning,portability --std=c11 \
		--suppress=missingIncludeSystem -Irunner/src runner/src runner/tests runner/fuzz examples
	for f in scripts/* bench/run bench/shards bench/ingress bench/python-pass bench/held-snapshot bench/lease-model bench/claim-idle-cost bench/latency-worker .ci/run runner/tests/e2e/*.t runner/tests/e2e/*.sh \
		sdk/python/*.py runner/tests/e2e/stages/py-sdk; do \
		[ -f "$$f" ] || exit 1; \
		if head -n 1 "$$f" | grep -q python3 || [ "$${f%.py}" != "$$f" ]; then python3 -c 'import ast, sys; ast.parse(open(sys.argv[1]).read())' "$$f" || exit 1; \
		else bash -n "$$f" || exit 1; fi; done
	scripts/schema-manifest > /dev/null
	scripts/lint-once
	scripts/lint-arrays --self-test
	scripts/lint-arrays
	scripts/gen-tube-vectors --check
	scripts/check-includes --self-test
	scripts/check-includes
	scripts/lint-state-machine
	scripts/check-sdklib --self-test $(BUILD)
	scripts/check-sdklib $(BUILD)
	scripts/check-conf-keys $(RUNNER)
	scripts/check-stage-libs $(BUILD) --self-test
	scripts/check-stage-libs $(BUILD)

# The pepsi user comes from conf/pepsi.sysusers, applied here only on the
# real system (root, no DESTDIR): a DESTDIR is a package or image root,
# whose own first boot (systemd-sysusers.service) or postinst applies it.
# The configuration is the operator's: installed once, 0640 root:pepsi so
# that the units' User=pepsi can read it and nobody else, never replaced.
UNITS    := pepsi-runner pepsi-ingress pepsi-maintain pepsi-beanstalk
MAN8     := pepsi-runner.8
MAN5     := pepsi.conf.5
CONF_DST := $(DESTDIR)$(SYSCONFDIR)/pepsi/pepsi.conf

install: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(SHAREDIR)/deploy $(DESTDIR)$(SHAREDIR)/revert \
		$(DESTDIR)$(SHAREDIR)/verify $(DESTDIR)$(SYSCONFDIR)/pepsi $(DESTDIR)$(UNITDIR) \
		$(DESTDIR)$(SYSUSERSDIR) $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(DOCDIR)
	install -m 755 $(RUNNER) $(DESTDIR)$(BINDIR)/pepsi-runner
	install -m 755 $(STAGE_BIN) $(DESTDIR)$(BINDIR)/pepsi-stage
	for s in $(STAGES); do ln -sf pepsi-stage $(DESTDIR)$(BINDIR)/pepsi-stage-$$s; done
	install -m 644 sqitch.plan sqitch.conf $(DESTDIR)$(SHAREDIR)/
	install -m 644 deploy/*.sql $(DESTDIR)$(SHAREDIR)/deploy/
	install -m 644 revert/*.sql $(DESTDIR)$(SHAREDIR)/revert/
	install -m 644 verify/*.sql $(DESTDIR)$(SHAREDIR)/verify/
	# The router database's project (issue 18): sqitch --chdir $(SHAREDIR)/router deploy
	install -d $(DESTDIR)$(SHAREDIR)/router/deploy $(DESTDIR)$(SHAREDIR)/router/revert $(DESTDIR)$(SHAREDIR)/router/verify
	install -m 644 router/sqitch.plan router/sqitch.conf $(DESTDIR)$(SHAREDIR)/router/
	install -m 644 router/deploy/*.sql $(DESTDIR)$(SHAREDIR)/router/deploy/
	install -m 644 router/revert/*.sql $(DESTDIR)$(SHAREDIR)/router/revert/
	install -m 644 router/verify/*.sql $(DESTDIR)$(SHAREDIR)/router/verify/
	install -m 644 conf/pepsi.sysusers $(DESTDIR)$(SYSUSERSDIR)/pepsi.conf
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ]; then \
		echo "systemd-sysusers $(SYSUSERSDIR)/pepsi.conf"; \
		systemd-sysusers $(SYSUSERSDIR)/pepsi.conf || exit 1; \
	else echo "make install: not applied (DESTDIR or not root): run systemd-sysusers $(SYSUSERSDIR)/pepsi.conf on the target"; fi
	@if [ -e $(CONF_DST) ]; then \
		echo "make install: $(CONF_DST) exists; left as it is (see conf/pepsi.conf for new keys)"; \
	else \
		echo "install -m 640 conf/pepsi.conf $(CONF_DST)"; \
		install -m 640 conf/pepsi.conf $(CONF_DST) || exit 1; \
		if [ "$$(id -u)" = 0 ] && getent group pepsi >/dev/null; then chgrp pepsi $(CONF_DST) || exit 1; \
		else echo "make install: group pepsi does not exist here: run chgrp pepsi $(SYSCONFDIR)/pepsi/pepsi.conf on the target"; fi; \
	fi
	for u in $(UNITS); do \
		sed 's|/usr/local/bin/|$(BINDIR)/|g; s|/usr/local/share/|$(PREFIX)/share/|g' conf/$$u.service \
			> $(DESTDIR)$(UNITDIR)/$$u.service && chmod 644 $(DESTDIR)$(UNITDIR)/$$u.service || exit 1; done
	sed 's|/usr/local/|$(PREFIX)/|g' man/$(MAN8) > $(DESTDIR)$(MANDIR)/man8/$(MAN8)
	sed 's|/usr/local/|$(PREFIX)/|g' man/$(MAN5) > $(DESTDIR)$(MANDIR)/man5/$(MAN5)
	chmod 644 $(DESTDIR)$(MANDIR)/man8/$(MAN8) $(DESTDIR)$(MANDIR)/man5/$(MAN5)
	install -m 644 README.md $(DESTDIR)$(DOCDIR)/README.md
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(PKGCONFIGDIR)
	install -m 644 runner/src/sdk/pepsi-worker.h $(DESTDIR)$(INCLUDEDIR)/pepsi-worker.h
	install -m 644 $(BUILD)/libpepsi-worker.a $(DESTDIR)$(LIBDIR)/libpepsi-worker.a
	install -m 755 $(BUILD)/$(SDKLIB_SONAME) $(DESTDIR)$(LIBDIR)/$(SDKLIB_SONAME)
	ln -sf $(SDKLIB_SONAME) $(DESTDIR)$(LIBDIR)/libpepsi-worker.so
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(patsubst $(PREFIX)/%,$${prefix}/%,$(LIBDIR))|' \
		-e 's|@INCLUDEDIR@|$(patsubst $(PREFIX)/%,$${prefix}/%,$(INCLUDEDIR))|' \
		-e 's|@VERSION@|$(VERSION)|' -e 's|@PRIVATE@|$(SDKLIB_PRIVATE)|' \
		runner/src/sdk/pepsi-worker.pc.in > $(DESTDIR)$(PKGCONFIGDIR)/pepsi-worker.pc
	chmod 644 $(DESTDIR)$(PKGCONFIGDIR)/pepsi-worker.pc

# Everything install put, except the configuration and the pepsi user and
# group: an operator's settings, and files the user may still own.
uninstall:
	rm -f $(DESTDIR)$(BINDIR)/pepsi-runner $(DESTDIR)$(BINDIR)/pepsi-stage $(STAGES:%=$(DESTDIR)$(BINDIR)/pepsi-stage-%)
	rm -rf $(DESTDIR)$(SHAREDIR)
	rm -f $(UNITS:%=$(DESTDIR)$(UNITDIR)/%.service) $(DESTDIR)$(SYSUSERSDIR)/pepsi.conf
	rm -f $(DESTDIR)$(MANDIR)/man8/$(MAN8) $(DESTDIR)$(MANDIR)/man5/$(MAN5)
	rm -rf $(DESTDIR)$(DOCDIR)
	rm -f $(DESTDIR)$(INCLUDEDIR)/pepsi-worker.h $(DESTDIR)$(LIBDIR)/libpepsi-worker.a \
		$(DESTDIR)$(LIBDIR)/$(SDKLIB_SONAME) $(DESTDIR)$(LIBDIR)/libpepsi-worker.so \
		$(DESTDIR)$(PKGCONFIGDIR)/pepsi-worker.pc
	@echo "make uninstall: kept $(SYSCONFDIR)/pepsi/pepsi.conf and the pepsi user and group"

clean:
	rm -rf build build-asan $(FUZZ_BUILD)
