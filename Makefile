# The README's commands. Thin: the work is in scripts/ and CMake.
PRESET ?= dev
BUILD := build/$(PRESET)
JOBS ?= $(shell nproc)

.PHONY: demo test build configure setup bench gpu-check format clean

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

test: build
	@ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

bench: build
	@scripts/bench.sh $(BUILD) $$(tail -n1 build/.python)

gpu-check:
	@scripts/gpu-check

format:
	@clang-format -i $$(git ls-files '*.h' '*.cpp' '*.cu' '*.cuh')

clean:
	rm -rf build
