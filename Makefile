# tessel — a plain build.
#   make            library, CLI and unit tests into build/
#   make asan       the same with AddressSanitizer + UBSan into build-asan/
#   make test       unit tests (normal build)
#   make fuzz       libFuzzer targets (clang) into build-fuzz/
# WERROR=1 turns warnings into errors (the test command sets it).

CC      ?= cc
BUILD   ?= build
OPT     ?= -O2 -g
SAN     ?=
WERROR  ?=

WARN    := -Wall -Wextra -Wshadow -Wmissing-prototypes -Wno-unused-parameter
ifeq ($(WERROR),1)
WARN    += -Werror
endif
CFLAGS  := -std=c11 -D_GNU_SOURCE -fPIC $(OPT) $(WARN) $(SAN) -Iinclude -Isrc -Itests
LDLIBS  := -lsqlite3 -ldl -lm -lpthread

LIB_SRC   := $(sort $(shell find src -name '*.c'))
TOOL_SRC  := $(sort $(wildcard tools/*.c))
TEST_SRC  := $(sort $(wildcard tests/unit/*.c)) tests/runner.c
HDRS      := $(shell find include src tests tools -name '*.h')

LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/obj/%.o) $(BUILD)/obj/build_id.o
TOOL_OBJ  := $(TOOL_SRC:%.c=$(BUILD)/obj/%.o)
TEST_OBJ  := $(TEST_SRC:%.c=$(BUILD)/obj/%.o) $(BUILD)/obj/registry.o

all: $(BUILD)/libtessel.a $(BUILD)/libtessel.so $(BUILD)/tessel $(BUILD)/unit_tests $(BUILD)/libfakecuda.so

$(BUILD)/obj/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

# the commit `tessel --version` names (src/api/info.c), rewritten only when it changes
$(BUILD)/commit.h: FORCE
	@mkdir -p $(BUILD)
	@c=$$(git rev-parse --short HEAD 2>/dev/null || echo unknown); \
	  echo "#define TSL_COMMIT \"$$c\"" > $@.tmp; cmp -s $@.tmp $@ || mv $@.tmp $@; rm -f $@.tmp
$(BUILD)/obj/src/api/info.o: $(BUILD)/commit.h
$(BUILD)/obj/src/api/info.o: CFLAGS += -I$(BUILD)
FORCE:
.PHONY: FORCE

$(BUILD)/libtessel.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/libtessel.so: $(LIB_OBJ)
	$(CC) $(SAN) -shared -o $@ $^ $(LDLIBS)

$(BUILD)/tessel: $(TOOL_OBJ) $(BUILD)/libtessel.a
	$(CC) $(SAN) -o $@ $(TOOL_OBJ) $(BUILD)/libtessel.a $(LDLIBS)

# tessel's build identity (part of cache keys): a hash of every library
# source, so a changed compiler never reuses what an older one prepared.
$(BUILD)/build_id.c: $(LIB_SRC) $(HDRS)
	@mkdir -p $(dir $@)
	@echo "extern const char tsl_build_id[]; const char tsl_build_id[] = \"$$(cat $(LIB_SRC) $(HDRS) | cksum | cut -d' ' -f1)\";" > $@

$(BUILD)/obj/build_id.o: $(BUILD)/build_id.c
	$(CC) $(CFLAGS) -c $< -o $@

# The runner's table of suites, collected from every TEST_SUITE(name).
$(BUILD)/registry.c: $(wildcard tests/unit/*.c)
	@mkdir -p $(dir $@)
	@names=$$(sed -n 's/^TEST_SUITE(\([a-z0-9_]*\)).*/\1/p' tests/unit/*.c); \
	{ echo '#include "test.h"'; \
	  for n in $$names; do echo "extern const test_case test_suite_$$n[];"; done; \
	  echo 'typedef struct { const char *name; const test_case *cases; } suite;'; \
	  echo 'extern const suite test_registry[];'; \
	  echo 'const suite test_registry[] = {'; \
	  for n in $$names; do echo "    {\"$$n\", test_suite_$$n},"; done; \
	  echo '    {0, 0},'; echo '};'; } > $@

$(BUILD)/obj/registry.o: $(BUILD)/registry.c
	$(CC) $(CFLAGS) -c $< -o $@

# A stand-in for libcuda.so.1 (tests/fake/): the unit tests load it as the
# driver, in a child process, to see which driver calls a run makes.
$(BUILD)/libfakecuda.so: tests/fake/cuda_driver.c $(HDRS)
	$(CC) $(CFLAGS) -Wno-missing-prototypes -shared -o $@ $<

$(BUILD)/unit_tests: $(TEST_OBJ) $(BUILD)/libtessel.a
	$(CC) $(SAN) -o $@ $(TEST_OBJ) $(BUILD)/libtessel.a $(LDLIBS)

test: all
	TESSEL_ROOT=$(CURDIR) $(BUILD)/unit_tests

asan:
	$(MAKE) BUILD=build-asan OPT="-O1 -g -fno-omit-frame-pointer" \
	    SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined" all

# libFuzzer targets: every tests/fuzz/fuzz_*.c is one target over the
# library, whose objects are compiled once with clang (fuzzer-no-link
# instruments them for coverage) and shared by every target.
FUZZ_SRC   := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_SAN   := -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_FLAGS := -std=c11 -D_GNU_SOURCE -g -O1 $(FUZZ_SAN) -Iinclude -Isrc -Itests
FUZZ_OBJ   := $(LIB_SRC:%.c=build-fuzz/obj/%.o) build-fuzz/obj/build_id.o
FUZZ_BIN   := $(FUZZ_SRC:tests/fuzz/%.c=build-fuzz/%)

build-fuzz/obj/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	clang $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

build-fuzz/obj/build_id.o: build/build_id.c
	@mkdir -p $(dir $@)
	clang $(FUZZ_FLAGS) -c $< -o $@

build-fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_OBJ)
	clang $(FUZZ_FLAGS) -fsanitize=fuzzer $< $(FUZZ_OBJ) -o $@ $(LDLIBS)

fuzz: $(FUZZ_BIN)

clean:
	rm -rf build build-asan build-fuzz

.PHONY: all test asan fuzz clean
