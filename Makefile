# Builds of ahp-bridge. Every binary is static (CGO_ENABLED=0) and reports
# its version and commit through debug.ReadBuildInfo (`ahp-bridge version`):
# the Go toolchain stamps them from the git checkout; COMMIT is the
# fallback for builds where it cannot (no git, -buildvcs=false).
#
#   make            the binary for this machine, in dist/
#   make cross      linux, darwin and windows for amd64 and arm64, in dist/
#   make image      the container image (needs docker)
#   make check      what CI runs

GO        ?= go
DIST      ?= dist
COMMIT    ?= $(shell git rev-parse HEAD 2>/dev/null)
PLATFORMS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64
LDFLAGS   := -s -w -X main.commit=$(COMMIT)
BUILD     := CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=auto -ldflags "$(LDFLAGS)"

.PHONY: build cross image check clean

build:
	$(BUILD) -o $(DIST)/ahp-bridge ./cmd/ahp-bridge

# dist/ahp-bridge-OS-ARCH, with .exe on windows.
cross:
	@set -e; for p in $(PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; ext=; [ $$os = windows ] && ext=.exe; \
		echo "$(DIST)/ahp-bridge-$$os-$$arch$$ext"; \
		GOOS=$$os GOARCH=$$arch $(BUILD) -o $(DIST)/ahp-bridge-$$os-$$arch$$ext ./cmd/ahp-bridge; \
	done

image:
	docker build --build-arg COMMIT=$(COMMIT) -t ahp-bridge .

check:
	.ci/run

clean:
	rm -rf $(DIST)
