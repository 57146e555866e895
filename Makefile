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
ALL_CFLAGS  = $(WARN) $(CFLAGS) $(PKG_CFLAGS) -I.
LIBS        = $(PKG_LIBS) -lfcgi

B = build

COMMON_SRC  = $(wildcard common/*.c)
DOCKER_SRC  = $(wildcard docker/*.c)
STORE_SRC   = $(wildcard store/*.c)
SANDBOX_SRC = $(wildcard sandbox/*.c)
FCGI_SRC    = $(filter-out fcgi/sandpitd.c,$(wildcard fcgi/*.c))
HANDLER_SRC = $(wildcard handlers/*.c)
STREAM_SRC  = $(wildcard stream/*.c)
CORE_SRC    = $(COMMON_SRC) $(DOCKER_SRC) $(STORE_SRC) $(SANDBOX_SRC)
CORE_OBJ    = $(CORE_SRC:%.c=$(B)/%.o)
APP_OBJ     = $(CORE_OBJ) $(FCGI_SRC:%.c=$(B)/%.o) $(HANDLER_SRC:%.c=$(B)/%.o)
STREAM_OBJ  = $(STREAM_SRC:%.c=$(B)/%.o)
# sandpit-stream: WebSocket framing (wslay), SHA-1 for the handshake (libcrypto)
STREAM_LIBS = -lwslay $(shell pkg-config --libs libcrypto 2>/dev/null || echo -lcrypto) -pthread

UNIT_SRC    = $(wildcard tests/unit/test_*.c)
UNIT_BIN    = $(UNIT_SRC:tests/unit/%.c=$(B)/tests/%)

.PHONY: all deps test unit api up down clean lint images bench bench-ssh bench-ws

all: $(B)/sandpitd $(B)/sandpit $(B)/sandpit-stream

deps:
	bash deploy/install-deps.sh

$(B)/%.o: %.c $(wildcard */*.h)
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) $(ALL_CFLAGS) -c $< -o $@

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

$(B)/tests/%: tests/unit/%.c $(APP_OBJ)
	@mkdir -p $(dir $@)
	@echo "  LINK    $@"
	@$(CC) $(ALL_CFLAGS) -o $@ $< $(APP_OBJ) $(LDFLAGS) $(LIBS) -lcmocka

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
# and bench/results/latest.md). Needs dockerd and wrk; about 6 minutes.
bench: all $(B)/bench/bench $(B)/bench/hello_fcgi
	SANDPIT_BIN=$(abspath $(B)) bash bench/bench.sh

# 200 small Docker operations over ssh://, pooled and not, in one run.
bench-ssh:
	bash bench/ssh_pool.sh

up:
	bash deploy/up.sh

down:
	bash deploy/down.sh

images:
	bash tests/images/build.sh

lint:
	bash tests/lint.sh

# 1000 idle WebSocket connections through nginx: resident memory of
# sandpit-stream and of nginx's workers (needs a built tree and dockerd).
bench-ws: all
	node bench/ws_idle.mjs

clean:
	rm -rf $(B)
