# fuzz/fuzz.mk - the fuzz targets (docs/internals/fuzz.md); included by the
# Makefile after its source lists, so it sees B, LIB, CFLAGS_ALL and friends.
#
#   make fuzz                     each target under libFuzzer for FUZZ_SECONDS
#                                 (600); findings go to build/fuzz/findings/
#   make fuzz FUZZ_SECONDS=60 FUZZ_JOBS=2 FUZZ_TARGETS="cron duration"
#   make test                     also replays every committed corpus
#
# Every fuzz/fuzz_NAME.c is a target and fuzz/corpus/NAME/ its seeds: a new
# target needs no edit here. Each is built twice:
#   build/fuzz/fuzz_NAME   clang, libFuzzer, ASan + UBSan; the library and
#                          the fakes are compiled with -fsanitize=fuzzer-no-link
#                          so coverage guides the fuzzer through the library,
#                          not only through the target;
#   $(B)/fuzz/replay_NAME  the suite's compiler and mode flags (so ASan and
#                          UBSan too under SAN=1) plus fuzz/replay.c; it runs
#                          with the other test binaries.

FUZZ_SRC := $(sort $(wildcard fuzz/fuzz_*.c))
FUZZ_NAMES := $(FUZZ_SRC:fuzz/fuzz_%.c=%)
FUZZ_SECONDS ?= 600
FUZZ_JOBS ?= 1
FUZZ_TARGETS ?= $(FUZZ_NAMES)
FUZZ_CC ?= clang
FZ := build/fuzz

.PHONY: fuzz _fuzz fuzz-build _fuzz_build

# MODE=test only so that the Makefile's mode variables are set; the fuzz
# build has its own folder and flags below.
fuzz: need-test
	@$(SUBMAKE) _fuzz MODE=test
fuzz-build: need-test
	@$(SUBMAKE) _fuzz_build MODE=test

# ---- replay, part of make test ----

FUZZ_REPLAY_BIN := $(FUZZ_NAMES:%=$(B)/fuzz/replay_%)
UNIT_BIN += $(FUZZ_REPLAY_BIN)

$(B)/fuzz/replay.o: fuzz/replay.c fuzz/fuzz.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS_ALL) -DFUZZ_CORPUS='"$(abspath fuzz/corpus)"' \
		$(CFLAGS_ALL) -c $< -o $@

$(B)/fuzz/replay_%: fuzz/fuzz_%.c $(B)/fuzz/replay.o fuzz/fuzz.h $(LIB) \
		$(FAKELIB)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS_ALL) -Itests -Ifuzz -include fuzz/fuzz.h \
		$(CFLAGS_ALL) $(LDFLAGS_ALL) -o $@ $< $(B)/fuzz/replay.o \
		$(FAKELIB) $(LIB) $(LDLIBS_ALL)

# ---- libFuzzer build ----

# clang's -Wformat=2 also warns on vsnprintf with a va_list format, which
# gcc accepts and err.c needs.
FUZZ_CFLAGS := $(WARN) -Wno-format-nonliteral -O1 -g -DSURECRON_FAILPOINTS \
	-DSURECRON_DEBUG -fsanitize=address,undefined \
	-fno-sanitize-recover=undefined -fno-omit-frame-pointer -pthread \
	-MMD -MP
FUZZ_LIB_OBJ := $(LIB_SRC:%.c=$(FZ)/obj/%.o)
FUZZ_FAKE_OBJ := $(FAKE_SRC:%.c=$(FZ)/obj/%.o)
FUZZ_BIN := $(FUZZ_TARGETS:%=$(FZ)/fuzz_%)

$(FZ)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CPPFLAGS_ALL) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link \
		-c $< -o $@

# The dashboard's files, embedded by scripts/embed.sh (the Makefile's
# WEB_GEN): the web surface (fuzz_web_request) serves them.
FUZZ_LIB_OBJ += $(FZ)/obj/gen/web_assets.o
$(FZ)/obj/gen/web_assets.o: $(WEB_GEN)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CPPFLAGS_ALL) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link \
		-c $< -o $@

$(FZ)/libsurecron.a: $(FUZZ_LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(FZ)/libfakes.a: $(FUZZ_FAKE_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(FZ)/fuzz_%: fuzz/fuzz_%.c fuzz/fuzz.h $(FZ)/libsurecron.a $(FZ)/libfakes.a
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CPPFLAGS_ALL) -Itests -Ifuzz -include fuzz/fuzz.h \
		$(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FZ)/libfakes.a \
		$(FZ)/libsurecron.a $(LDLIBS_ALL)

_fuzz_build: $(FUZZ_BIN)

_fuzz: $(FUZZ_BIN)
	@FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_JOBS=$(FUZZ_JOBS) \
		sh fuzz/run.sh $(FZ) $(FUZZ_TARGETS)

-include $(wildcard $(FZ)/*.d $(FZ)/obj/src/*.d $(FZ)/obj/tests/fakes/*.d \
	$(B)/fuzz/*.d)
