# Convenience front end over CMake (the build itself is CMake's).
#   make run    build (Release) and run the main job
#   make test   build and run every test (ctest)
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_ARGS ?=

.PHONY: build run test test-asan clean

build:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_ARGS)
	cmake --build $(BUILD) -j $(JOBS)

# The main job: what is usable, then MambaVision-T on the best backend
# (seeded weights; RUN_ARGS adds options, e.g. RUN_ARGS="--batch 64"), then
# `mvrt classify` of the sample images (seeded weights: it says the classes
# are meaningless; pass --weights for real ones). Its failure (a build
# without libjpeg / libpng) does not fail the job.
RUN_ARGS ?=
run: build
	$(BUILD)/bin/mvrt info
	$(BUILD)/bin/mvrt run $(RUN_ARGS)
	-$(BUILD)/bin/mvrt classify --top 3 data/samples

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# The whole suite under AddressSanitizer + UndefinedBehaviorSanitizer (CPU only).
test-asan:
	$(MAKE) test BUILD=$(BUILD)-asan \
	  CMAKE_ARGS="-DMVRT_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMVRT_WITH_CUDA=OFF -DMVRT_WITH_HIP=OFF $(CMAKE_ARGS)"

clean:
	rm -rf $(BUILD) $(BUILD)-asan
