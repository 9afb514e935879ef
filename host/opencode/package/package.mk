# host/opencode/package/package.mk — the npm package OpenCode installs by name
# ("plugin": ["ocbg@VERSION"]), included by host/opencode/opencode.mk.
#
#   make package-binaries  $(BUILD)/pkg/linux-x64/ and linux-arm64/: ocbg.so and
#                          ocbg_opencode.node, built against Debian 11's glibc
#                          2.31 (build-aux/fetch-sysroot), stripped, then checked
#                          by build-aux/check-binary (C library only, no symbol
#                          newer than GLIBC_2.31, only the entry points exported)
#   make package           $(BUILD)/ocbg-$(VERSION).tgz: both architectures in one
#                          tarball (ocbg.js loads <platform>-<arch>/), zod and
#                          jsonc-parser bundled,
#                          LICENSE and THIRD_PARTY_LICENSES; prints its size
#   make package-publish-check   npm publish --dry-run on it
#
# One tarball with a folder per architecture rather than per-platform optional
# packages (OpenCode's own layout): OpenCode installs a plugin with its own
# package manager, and a plugin whose binary sits in an optional dependency is
# one missing install away from loading nothing; each architecture adds about
# 1 MB to the tarball. The cross compiler is Debian's gcc-aarch64-linux-gnu (make
# package-deps installs what is missing, as root).

PKG_ARCHES        := x64 arm64
PKG_BIN           := $(BUILD)/pkg
PKG_DEBARCH_x64   := amd64
PKG_DEBARCH_arm64 := arm64
PKG_TRIPLET_x64   := x86_64-linux-gnu
PKG_TRIPLET_arm64 := aarch64-linux-gnu
PKG_GCC_x64       ?= gcc
PKG_GCC_arm64     ?= aarch64-linux-gnu-gcc
PKG_STRIP_x64     ?= strip
PKG_STRIP_arm64   ?= aarch64-linux-gnu-strip
SYSROOT_x64       := $(abspath build/sysroot/bullseye-amd64)
SYSROOT_arm64     := $(abspath build/sysroot/bullseye-arm64)
SYSROOT_x64_STAMP   := build/sysroot/bullseye-amd64/.stamp-bullseye-glibc2.31-13+deb11u11
SYSROOT_arm64_STAMP := build/sysroot/bullseye-arm64/.stamp-bullseye-glibc2.31-13+deb11u11
# gcc looks in its own install's library folders before the sysroot's: -B and
# -L put Debian 11's crt files and libraries first.
pkg_cc = $(PKG_GCC_$(1)) --sysroot=$(SYSROOT_$(1)) -B$(SYSROOT_$(1))/usr/lib/$(PKG_TRIPLET_$(1))/ \
    -L$(SYSROOT_$(1))/usr/lib/$(PKG_TRIPLET_$(1)) -L$(SYSROOT_$(1))/lib/$(PKG_TRIPLET_$(1))
PKG_CC_x64   = $(call pkg_cc,x64)
PKG_CC_arm64 = $(call pkg_cc,arm64)
# The exports each binary may have.
PKG_EXPORTS_so   := ocp_plugin_entry
PKG_EXPORTS_node := napi_register_module_v1,node_api_module_get_api_version_v1
# Where the package says its sources live (npm shows it); override for a fork.
PKG_REPOSITORY ?= git+https://github.com/ocbg/ocbg.git

.PHONY: package package-binaries package-deps package-publish-check pkg-force
pkg-force:

$(SYSROOT_x64_STAMP) $(SYSROOT_arm64_STAMP): build/sysroot/bullseye-%/.stamp-bullseye-glibc2.31-13+deb11u11:
	@sh build-aux/fetch-sysroot $* build/sysroot/bullseye-$*

package-deps: ## what make package needs (the arm64 cross compiler, curl, dpkg-deb): apt-get as root
	@sh build-aux/ensure-deps --package

# Each architecture: ocbg.so and the addon built in $(BUILD)/pkg-ARCH by this
# Makefile itself (the same sources and flags as every build, cJSON and SQLite
# compiled in), against the sysroot; copied stripped into $(PKG_BIN)/linux-ARCH
# only when they changed (so the tarball is repacked only then).
$(PKG_BIN)/linux-%/.built: pkg-force $$(SYSROOT_$$*_STAMP) $(LIBS_STAMP) $(TS_STAMP) $(OC_HDR_STAMP)
	@sh build-aux/ensure-deps --package --check
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/pkg-$* CC="$(PKG_CC_$*)" SAN= CFLAGS= OPT="-O2 -g" \
	    OC_NPM=$(OC_NPM) $(BUILD)/pkg-$*/ocbg.so $(BUILD)/pkg-$*/opencode/ocbg_opencode.node
	@mkdir -p $(dir $@)
	@for f in ocbg.so opencode/ocbg_opencode.node; do \
	  $(PKG_STRIP_$*) --strip-debug -o $(dir $@)/.new $(BUILD)/pkg-$*/$$f || exit 1; \
	  if cmp -s $(dir $@)/.new $(dir $@)/$${f#opencode/}; then rm $(dir $@)/.new; \
	  else mv $(dir $@)/.new $(dir $@)/$${f#opencode/}; echo "ocbg: $(dir $@)$${f#opencode/}"; fi; \
	done
	@sh build-aux/check-binary $(dir $@)ocbg.so $(PKG_EXPORTS_so) $(dir $@)ocbg_opencode.node $(PKG_EXPORTS_node)
	@test -f $@ || touch $@

package-binaries: $(PKG_ARCHES:%=$(PKG_BIN)/linux-%/.built) ## both architectures' binaries, checked (glibc 2.31, C library only)

# The licences: ocbg's (LICENSE) and, in one file, those of what the binaries
# and the package carry (tree-sitter, tree-sitter-bash, cJSON, SQLite; zod and
# jsonc-parser keep their own in node_modules/).
OC_PKG_DIR := $(OC_DIR)/package
OC_PKG     := $(BUILD)/ocbg-$(VERSION).tgz
PKG_BINS   := $(foreach a,$(PKG_ARCHES),$(PKG_BIN)/linux-$(a)/ocbg.so $(PKG_BIN)/linux-$(a)/ocbg_opencode.node)
$(PKG_BINS): $(PKG_ARCHES:%=$(PKG_BIN)/linux-%/.built) ;

package: $(OC_PKG) ## build/ocbg-VERSION.tgz: the npm package (x64 and arm64), OpenCode installs it by name
$(OC_PKG): host/opencode/package/package.json host/opencode/package/package.mk LICENSE $(PKG_BINS) \
           $(OC_DIR)/ocbg.js $(OC_DIR)/ocbg_options.mjs $(OC_TUI_FILES) $(OC_ZOD) $(OC_JSONC)
	rm -rf $(OC_PKG_DIR) && mkdir -p $(OC_PKG_DIR)/node_modules
	sed -e 's/@VERSION@/$(VERSION)/' -e 's/@OPENCODE_VERSION@/$(OPENCODE_VERSION)/' \
	    -e 's/@ZOD_VERSION@/$(ZOD_VERSION)/' -e 's/@JSONC_PARSER_VERSION@/$(JSONC_PARSER_VERSION)/' -e 's|@REPOSITORY@|$(PKG_REPOSITORY)|' $< > $(OC_PKG_DIR)/package.json
	cp $(OC_DIR)/ocbg.js $(OC_DIR)/ocbg_options.mjs $(OC_TUI_FILES) LICENSE $(OC_PKG_DIR)/
	for a in $(PKG_ARCHES); do mkdir -p $(OC_PKG_DIR)/linux-$$a && \
	  cp $(PKG_BIN)/linux-$$a/ocbg.so $(PKG_BIN)/linux-$$a/ocbg_opencode.node $(OC_PKG_DIR)/linux-$$a/; done
	{ for l in "tree-sitter 0.25.1 (MIT):$(TS_DIR)/tree-sitter/LICENSE" \
	           "tree-sitter-bash 0.25.0 (MIT):$(TS_DIR)/tree-sitter-bash/LICENSE" \
	           "cJSON 1.7.19 (MIT):$(TS_DIR)/cjson/LICENSE" "SQLite 3.52.0 (public domain):$(TS_DIR)/sqlite/NOTICE"; do \
	    printf '%s\ncompiled into linux-*/ocbg.so%s\n\n' "$${l%%:*}" \
	      "$$(case $$l in cJSON*) echo ' and linux-*/ocbg_opencode.node';; esac)"; cat "$${l#*:}"; printf '\n\n'; \
	  done; } > $(OC_PKG_DIR)/THIRD_PARTY_LICENSES
	cp -R $(OC_DIR)/node_modules/zod $(OC_DIR)/node_modules/jsonc-parser $(OC_PKG_DIR)/node_modules/
	cd $(OC_PKG_DIR) && $(NPM) pack --silent --pack-destination $(abspath $(BUILD)) >/dev/null
	@echo "ocbg: $@: $$(du -k $@ | cut -f1) KiB packed, $$(du -sk --exclude=node_modules $(OC_PKG_DIR) | cut -f1) KiB unpacked without node_modules"

# What npm would publish, and its complaints (none expected): a dry run. Not
# being logged in to npmjs.org is npm's only warning here, and not the package's.
package-publish-check: $(OC_PKG) ## npm publish --dry-run on the package
	cd $(OC_PKG_DIR) && $(NPM) publish --dry-run --ignore-scripts 2>&1 | tee $(abspath $(BUILD))/publish-dry-run.txt
	@! grep -Ei '^npm (warn|err)' $(BUILD)/publish-dry-run.txt | grep -v 'requires you to be logged in'

# The whole suite (make check) for arm64: cross-built against Debian 11's
# arm64 C library in build/arm64, each test run by qemu-user through binfmt
# (QEMU_LD_PREFIX: the sysroot's dynamic loader and libraries). About 1 minute
# to build and 1 to run on the 2-core machine.
.PHONY: check-arm64
check-arm64: $(SYSROOT_arm64_STAMP) ## the whole suite built for arm64 and run under qemu-user
	@sh build-aux/ensure-deps --package --qemu
	@sh build-aux/qemu-binfmt
	QEMU_LD_PREFIX=$(SYSROOT_arm64) $(MAKE) --no-print-directory check BUILD=build/arm64 CC="$(PKG_CC_arm64)" SAN= \
	    OPT="-O2 -g" TEST_ENV="$(TEST_ENV) OCBG_BUILD=$(abspath build/arm64) \
	    OCBG_PLUGIN_DIR=$(abspath build/arm64/plugin-dir) OCBG_TEST_TIMEOUT_SCALE=3"
