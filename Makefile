# sandpit — plain Makefile. `make` builds, `make test` runs every test,
# `make up` / `make down` run a local stack. See README.md.

CC      ?= cc
PKGS     = json-c libcurl hiredis libsodium libarchive
CFLAGS  ?= -O2 -g
WARN     = -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wshadow -Wstrict-prototypes \
           -Wmissing-prototypes -Wformat=2 -Wno-format-nonliteral -Wno-format-truncation -Werror
ifdef SANITIZE
CFLAGS  += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS += -fsanitize=$(SANITIZE)
endif
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
ALL_CFLAGS  = $(WARN) $(CFLAGS) $(PKG_CFLAGS) -I. -I$(B)/gen
LIBS        = $(PKG_LIBS) -lfcgi

B = build

COMMON_SRC  = $(wildcard common/*.c)
DOCKER_SRC  = $(wildcard docker/*.c)
STORE_SRC   = $(wildcard store/*.c)
# sandbox/ and its parts (issue 25's layout: base ← host ← box ← run ←
# life ← work/keep); sandbox/helper/ is the musl helper, built apart
SANDBOX_PARTS = base host box run life work keep
SANDBOX_SRC = $(wildcard sandbox/*.c $(SANDBOX_PARTS:%=sandbox/%/*.c))
FCGI_SRC    = $(filter-out fcgi/sandpitd.c,$(wildcard fcgi/*.c))
HANDLER_SRC = $(wildcard handlers/*.c)
STREAM_SRC  = $(wildcard stream/*.c)
CORE_SRC    = $(COMMON_SRC) $(DOCKER_SRC) $(STORE_SRC) $(SANDBOX_SRC)
CORE_OBJ    = $(CORE_SRC:%.c=$(B)/%.o) $(B)/gen/sh_programs.o $(B)/gen/lua_programs.o
APP_OBJ     = $(CORE_OBJ) $(FCGI_SRC:%.c=$(B)/%.o) $(HANDLER_SRC:%.c=$(B)/%.o)
STREAM_OBJ  = $(STREAM_SRC:%.c=$(B)/%.o)
# sandpit-stream: WebSocket framing (wslay), SHA-1 for the handshake (libcrypto)
STREAM_LIBS = -lwslay $(shell pkg-config --libs libcrypto 2>/dev/null || echo -lcrypto) -pthread

UNIT_SRC    = $(wildcard tests/unit/test_*.c)
UNIT_BIN    = $(UNIT_SRC:tests/unit/%.c=$(B)/tests/%)

.PHONY: all deps test unit api up down clean lint objs images test-images bench bench-ssh bench-ws fuzz fuzz-run install asan

all: $(B)/sandpitd $(B)/sandpit $(B)/sandpit-stream $(B)/web/.built

# The dashboard's static files (web/build.sh: web/src plus xterm.js from
# npm, no CDN), which nginx serves at / ; prints the bundle's size.
$(B)/web/.built: $(wildcard web/src/*) web/build.sh web/package.json web/package-lock.json
	@sh web/build.sh $(abspath $(B))/web
	@touch $@

deps:
	bash deploy/install-deps.sh

# A system service behind the operator's nginx (deploy/install.sh; README,
# "Operations"): binaries, systemd units, /etc/sandpit (written once), the
# nginx include. PREFIX (/usr/local) and DESTDIR (a staging root) as usual.
PREFIX ?= /usr/local
install: all
	DESTDIR="$(DESTDIR)" PREFIX="$(PREFIX)" SANDPIT_BIN="$(abspath $(B))" bash deploy/install.sh

$(B)/%.o: %.c $(wildcard */*.h */*/*.h)
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) $(ALL_CFLAGS) -c $< -o $@

# The shell programs run in containers (sandbox/sh/*.sh) as C strings:
# build/gen/sh_programs.{c,h} (sh_NAME), and each program as it runs, its
# comments out and its includes in, as build/sh/NAME.sh (sandbox/sh/embed.awk).
SH_SRC = $(sort $(wildcard sandbox/sh/*.sh))
# one awk run makes both files: a grouped target (&:), so a changed
# program remakes sh_programs.c and its object in the same make
$(B)/gen/sh_programs.h $(B)/gen/sh_programs.c &: $(SH_SRC) sandbox/sh/embed.awk
	@mkdir -p $(B)/gen $(B)/sh
	@echo "  GEN     $@"
	@awk -v gen=$(B)/gen -v sh=$(B)/sh -f sandbox/sh/embed.awk $(SH_SRC)
$(SANDBOX_SRC:%.c=$(B)/%.o): $(B)/gen/sh_programs.h
$(B)/gen/sh_programs.o: $(B)/gen/sh_programs.c
	@echo "  CC      $<"
	@$(CC) $(ALL_CFLAGS) -c $< -o $@

# The store's Lua programs (store/lua/*.lua) as C data:
# build/gen/lua_programs.{c,h} (store_lua_NAME: text and SHA-1), and each
# program as Redis gets it, its comments out, as build/lua/NAME.lua
# (store/lua/embed.awk).
LUA_SRC = $(sort $(wildcard store/lua/*.lua))
$(B)/gen/lua_programs.h $(B)/gen/lua_programs.c &: $(LUA_SRC) store/lua/embed.awk
	@mkdir -p $(B)/gen $(B)/lua
	@echo "  GEN     $@"
	@awk -v gen=$(B)/gen -v lua=$(B)/lua -f store/lua/embed.awk $(LUA_SRC)
$(STORE_SRC:%.c=$(B)/%.o): $(B)/gen/lua_programs.h
$(B)/gen/lua_programs.o: $(B)/gen/lua_programs.c
	@echo "  CC      $<"
	@$(CC) $(ALL_CFLAGS) -c $< -o $@

# The helper inside every sandbox (sandbox/helper/, issue 16): static, with
# musl (musl-tools), so it runs in any image; sandbox/helper.c embeds it
# (.incbin) and names its volume by its hash, so the build must be
# reproducible (no timestamps, stripped).
HELPER_CC ?= musl-gcc
$(B)/helper/sandpit-helper: sandbox/helper/sandpit-helper.c sandbox/helper/files.c \
		sandbox/helper/files.h sandbox/helper/io.c sandbox/helper/io.h sandbox/helper/serve.c \
		sandbox/helper/serve.h sandbox/helper/clock.c sandbox/helper/clock.h \
		sandbox/helper/hmac.c sandbox/helper/hmac.h sandbox/helper/proto.h
	@mkdir -p $(dir $@)
	@echo "  MUSL    $@"
	@$(HELPER_CC) -static -Os -s -std=c11 -Wall -Wextra -Wshadow -Wstrict-prototypes \
		-Wmissing-prototypes -Werror -o $@ $(filter %.c,$^)
$(B)/sandbox/helper.o $(B)/fuzz/obj/sandbox/helper.o: $(B)/helper/sandpit-helper
$(B)/sandbox/helper.o: ALL_CFLAGS += -DSANDPIT_HELPER_BIN='"$(B)/helper/sandpit-helper"'
$(B)/fuzz/obj/sandbox/helper.o: FUZZ_CFLAGS += -DSANDPIT_HELPER_BIN='"$(B)/helper/sandpit-helper"'
# handlers/v1_openapi.c embeds this file (.incbin)
$(B)/handlers/v1_openapi.o $(B)/fuzz/obj/handlers/v1_openapi.o: handlers/v1_openapi.json

$(B)/sandpitd: $(APP_OBJ) $(B)/fcgi/sandpitd.o
	@echo "  LINK    $@"
	@$(CC) $(LDFLAGS) -o $@ $^ $(LIBS)

$(B)/sandpit: $(CORE_OBJ) $(patsubst %.c,$(B)/%.o,$(wildcard cli/*.c))
	@echo "  LINK    $@"
	@$(CC) $(LDFLAGS) -o $@ $^ $(LIBS)

# The /sandbox-exec WebSocket daemon. It validates exec messages against the
# same route table as sandpitd, hence APP_OBJ.
$(B)/sandpit-stream: $(APP_OBJ) $(STREAM_OBJ)
	@echo "  LINK    $@"
	@$(CC) $(LDFLAGS) -pthread -o $@ $^ $(LIBS) $(STREAM_LIBS)

$(B)/tests/%: tests/unit/%.c $(wildcard tests/unit/*.h) $(APP_OBJ)
	@mkdir -p $(dir $@)
	@echo "  LINK    $@"
	@$(CC) $(ALL_CFLAGS) -o $@ $< $(APP_OBJ) $(LDFLAGS) $(LIBS) -lcmocka
# the helper's HMAC, built into the protocol's test with glibc
$(B)/tests/test_proto: sandbox/helper/hmac.c

unit: $(UNIT_BIN)
	@set -e; for t in $(UNIT_BIN); do echo "== $$t"; $$t; done

# Every test: installs what is missing, starts dockerd if none answers,
# builds the local test images, then unit and API tests against the real
# stack on free loopback ports.
test:
	bash tests/run.sh

$(B)/bench/%: bench/%.c $(CORE_OBJ)
	@mkdir -p $(dir $@)
	@echo "  LINK    $@"
	@$(CC) $(ALL_CFLAGS) -o $@ $< $(CORE_OBJ) $(LDFLAGS) $(LIBS)

# sandpit against the raw Docker Engine API in one run: one table (stdout
# and bench/results/latest.md). Needs dockerd and wrk; about 9 minutes.
bench: all $(B)/bench/bench $(B)/bench/hello_fcgi
	SANDPIT_BIN=$(abspath $(B)) bash bench/bench.sh

# 200 small Docker operations over ssh://, pooled and not, in one run.
bench-ssh:
	bash bench/ssh_pool.sh

up:
	bash deploy/up.sh

down:
	bash deploy/down.sh

# The template images (images/build.sh: what is missing or out of date, one
# at a time), then their table with sizes and versions.
images:
	bash images/build.sh
	@bash images/build.sh --list

# The test fixtures most API tests use (sandpit-test/*).
test-images:
	bash tests/images/build.sh

# tests/lint.sh's layering check reads the objects (tests/layers.sh)
lint: objs
	bash tests/lint.sh

objs: $(APP_OBJ) $(STREAM_OBJ) $(B)/fcgi/sandpitd.o

# The three programs with ASan + UBSan (+ LeakSanitizer) in build-asan/,
# apart from build/: `SANDPIT_BIN=$(abspath build-asan)` runs a stack on
# them (tests/run.sh does, for one API test file).
ASAN_B = build-asan
asan:
	@$(MAKE) -s B=$(ASAN_B) SANITIZE=address,undefined all

# 1000 idle WebSocket connections through nginx: resident memory of
# sandpit-stream and of nginx's workers (needs a built tree and dockerd).
bench-ws: all
	node bench/ws_idle.mjs

# libFuzzer targets (tests/fuzz/fuzz_*.c) against the project's own sources,
# built apart from the gcc build: clang, ASan + UBSan, objects under
# build/fuzz/obj/, one archive the targets link against. `make fuzz-run
# FUZZ_SECONDS=N` runs each target for N seconds on a copy of its corpus.
FUZZ_CC      = clang
FUZZ_SAN     = -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_CFLAGS  = $(filter-out -Wno-format-truncation,$(WARN)) -O1 -g $(FUZZ_SAN) $(PKG_CFLAGS) -I. -I$(B)/gen
FUZZ_LIB_SRC = $(CORE_SRC) $(FCGI_SRC) $(HANDLER_SRC) $(filter-out stream/main.c,$(STREAM_SRC))
FUZZ_LIB_OBJ = $(FUZZ_LIB_SRC:%.c=$(B)/fuzz/obj/%.o) $(B)/fuzz/obj/gen/sh_programs.o \
	       $(B)/fuzz/obj/gen/lua_programs.o
FUZZ_SRC     = $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BIN     = $(FUZZ_SRC:tests/fuzz/fuzz_%.c=$(B)/fuzz/%)
FUZZ_SECONDS ?= 60

$(B)/fuzz/obj/%.o: %.c $(wildcard */*.h */*/*.h)
	@mkdir -p $(dir $@)
	@echo "  CC-FUZZ $<"
	@$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(SANDBOX_SRC:%.c=$(B)/fuzz/obj/%.o): $(B)/gen/sh_programs.h
$(B)/fuzz/obj/gen/sh_programs.o: $(B)/gen/sh_programs.c
	@mkdir -p $(dir $@)
	@echo "  CC-FUZZ $<"
	@$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(STORE_SRC:%.c=$(B)/fuzz/obj/%.o): $(B)/gen/lua_programs.h
$(B)/fuzz/obj/gen/lua_programs.o: $(B)/gen/lua_programs.c
	@mkdir -p $(dir $@)
	@echo "  CC-FUZZ $<"
	@$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(B)/fuzz/libsandpit.a: $(FUZZ_LIB_OBJ)
	@rm -f $@
	@ar rcs $@ $^

$(B)/fuzz/%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h $(B)/fuzz/libsandpit.a
	@echo "  LINK    $@"
	@$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(B)/fuzz/libsandpit.a $(LIBS) $(STREAM_LIBS)

fuzz: $(FUZZ_BIN)

fuzz-run: fuzz
	FUZZ_SECONDS=$(FUZZ_SECONDS) bash tests/fuzz/run.sh $(FUZZ_BIN)

clean:
	rm -rf $(B) $(ASAN_B)
