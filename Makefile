# The README's commands. Thin: the work is in scripts/ and CMake.
PRESET ?= dev
BUILD := build/$(PRESET)
JOBS ?= $(shell nproc)

.PHONY: demo test build configure setup bench gpu-check format clean sanitize

# Installs what is missing and prints the Python interpreter to build against.
setup:
	@mkdir -p build && scripts/setup.sh > build/.python

configure: setup
	@cmake --preset $(PRESET) -DPython_EXECUTABLE=$$(tail -n1 build/.python) > build/.configure.log || (cat build/.configure.log; exit 1)
	@grep -E "kiln:" build/.configure.log || true

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

demo: build
	@scripts/demo.sh $(BUILD) $$(tail -n1 build/.python)

# The earlier main demo: the seed's kernels and an MLP on scikit-learn's digits.
.PHONY: demo-digits
demo-digits: build
	@scripts/demo.sh $(BUILD) $$(tail -n1 build/.python) --digits

test: build
	@ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

bench: build
	@scripts/bench.sh $(BUILD) $$(tail -n1 build/.python)

# The C++ suite under a sanitizer: SAN=asan (AddressSanitizer + UBSan, the default) or
# SAN=tsan (ThreadSanitizer); FILTER narrows it (a gtest filter). Any report fails the run.
# SAN_DIR and SAN_CMAKE pick another build folder and add configure options, e.g. a TSan build
# without CUDA: SAN_DIR=build/tsan-nocuda SAN_CMAKE=-DKILN_CUDA=OFF.
SAN ?= asan
FILTER ?= *
SAN_DIR ?= build/$(SAN)
SAN_CMAKE ?=
sanitize: setup
	@cmake --preset $(SAN) -B $(SAN_DIR) $(SAN_CMAKE) -DPython_EXECUTABLE=$$(tail -n1 build/.python) > build/.configure-$(SAN).log || (cat build/.configure-$(SAN).log; exit 1)
	@cmake --build $(SAN_DIR) -j $(JOBS) --target kiln_tests
	@# Unoptimized, libkiln keeps its link to the driver; without one, the toolkit's stub serves.
	@if ! ldconfig -p | grep -q 'libcuda.so.1 '; then stub=$$(ls /usr/local/cuda/lib*/stubs/libcuda.so 2>/dev/null | head -1); \
	  if [ -n "$$stub" ]; then mkdir -p $(SAN_DIR)/cudastub && ln -sf $$stub $(SAN_DIR)/cudastub/libcuda.so.1; fi; fi
	@# intercept_tls_get_addr=0: GCC 12's LeakSanitizer, tracking the dynamic TLS of the CPU
	@# kernels' dlopen'ed libraries, takes bogus block bounds from its glibc 2.19 heuristic and
	@# its tracer crashes at exit ("Tracer caught signal 11"); glibc's DTV still reaches them.
	@LD_LIBRARY_PATH=$(CURDIR)/$(SAN_DIR)/cudastub:$$LD_LIBRARY_PATH KILN_POISON=1 ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=0:intercept_tls_get_addr=0 \
	  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$(CURDIR)/scripts/tsan.supp \
	  $(SAN_DIR)/tests/kiln_tests --gtest_filter='$(FILTER)' --gtest_brief=1

gpu-check:
	@scripts/gpu-check

format:
	@clang-format -i $$(git ls-files '*.h' '*.cpp' '*.cu' '*.cuh')

clean:
	rm -rf build
