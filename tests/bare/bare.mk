# Bare machines (issue 38): the package's ocbg.so, loaded by a host that knows
# only include/ocp.h and the C library (tests/bare/bare_host.c), inside bare
# Debian 11 roots (build-aux/bare-root: glibc 2.31, no compiler, no libcjson,
# no libsqlite3); arm64 through qemu-user's binfmt handler. Needs root
# (debootstrap, chroot). docs/testing.md, "Bare roots".

# The plugin each run loads, and what makes it (BARE_NEEDS= BARE_SO_x64=build/ocbg.so
# runs the dev build instead: it must fail to load there).
BARE_SO_x64   ?= $(BUILD)/pkg/linux-x64/ocbg.so
BARE_SO_arm64 ?= $(BUILD)/pkg/linux-arm64/ocbg.so
BARE_NEEDS    ?= package-binaries
BARE_ROOTS    := build/roots
BARE_SRC      := tests/bare/bare_host.c tests/bare/bare_json.c
BARE_DEPS     := $(BARE_SRC) tests/bare/bare_json.h include/ocp.h
BARE_CFLAGS    = -std=c11 -O2 -g $(WARN) -Iinclude -pthread
# Only these may ocbg.so need (ldd inside the root, one line each).
BARE_LIBS_OK  := ^[[:space:]]*(linux-vdso\.so\.1|lib(c|m|pthread|dl)\.so\.[0-9]+ => |/lib(64)?/ld-linux)

FORMAT_FILES += tests/bare/bare_host.c tests/bare/bare_json.c tests/bare/bare_json.h

.PHONY: check-bare check-bare-x64 check-bare-arm64 check-bare-host

# bare_host for each package architecture, with the package's compiler
# (PKG_CC_x64, PKG_CC_arm64: host/opencode/package/package.mk), against
# Debian 11's glibc like ocbg.so itself.
$(BUILD)/bare/x64/bare_host $(BUILD)/bare/arm64/bare_host: $(BUILD)/bare/%/bare_host: $(BARE_DEPS) $$(SYSROOT_$$*_STAMP)
	@mkdir -p $(dir $@)
	$(PKG_CC_$*) $(BARE_CFLAGS) -o $@ $(BARE_SRC) -ldl

$(BUILD)/bare/host/bare_host: $(BARE_DEPS)
	@mkdir -p $(dir $@)
	$(CC) $(BARE_CFLAGS) -o $@ $(BARE_SRC) -ldl

# $(1): the package's name of the architecture (x64, arm64), $(2): Debian's.
# The root made or checked, a fresh /ocbg-test in it with the two binaries,
# ldd of ocbg.so there, then bare_host's TAP; fails on a failed check or a
# library beyond libc, libm, libpthread, libdl and the loader.
define bare_run
@root=$(BARE_ROOTS)/bullseye-$(2); t0=$$(date +%s%N); \
[ "$$(id -u)" = 0 ] || { echo "check-bare-$(1): needs root (debootstrap, chroot)" >&2; exit 1; }; \
msg=$$(sh build-aux/bare-root $(2) $$root) || exit 1; echo "# $$msg"; \
rm -rf $$root/ocbg-test && mkdir $$root/ocbg-test && cp $(BARE_SO_$(1)) $$root/ocbg-test/ocbg.so && \
    cp $(BUILD)/bare/$(1)/bare_host $$root/ocbg-test/bare_host || exit 1; \
echo "# ldd /ocbg-test/ocbg.so in $$root:"; \
env -i PATH=/usr/bin:/bin /usr/sbin/chroot $$root ldd /ocbg-test/ocbg.so >$$root/ocbg-test/ldd.txt 2>&1; \
sed 's/^[[:space:]]*/#   /' $$root/ocbg-test/ldd.txt; \
extra=$$(grep -v -E '$(BARE_LIBS_OK)' $$root/ocbg-test/ldd.txt); \
env -i PATH=/usr/bin:/bin /usr/sbin/chroot $$root /ocbg-test/bare_host /ocbg-test/ocbg.so; rc=$$?; \
[ -z "$$extra" ] || { echo "# check-bare-$(1): ldd reports more than libc, libm, libpthread, libdl and the loader:"; \
    echo "$$extra" | sed 's/^[[:space:]]*/#   /'; rc=1; }; \
echo "# check-bare-$(1): $$((($$(date +%s%N) - t0) / 1000000)) ms, $$([ $$rc = 0 ] && echo passed || echo FAILED)"; exit $$rc
endef

check-bare-x64: $(BUILD)/bare/x64/bare_host $$(BARE_NEEDS) ## the x64 package's ocbg.so in a bare Debian 11 root (root)
	$(call bare_run,x64,amd64)

check-bare-arm64: $(BUILD)/bare/arm64/bare_host $$(BARE_NEEDS) ## the arm64 package's ocbg.so in a bare Debian 11 root, under qemu (root)
	$(call bare_run,arm64,arm64)

check-bare: ## check-bare-x64 and check-bare-arm64, both run
	@rc=0; $(MAKE) --no-print-directory check-bare-x64 || rc=1; \
	$(MAKE) --no-print-directory check-bare-arm64 || rc=1; exit $$rc

# The same host on this machine, on the dev build (BARE_WRAP="$(VALGRIND)": under valgrind).
check-bare-host: $(BUILD)/ocbg.so $(BUILD)/bare/host/bare_host ## bare_host on this machine's dev build/ocbg.so
	$(BARE_WRAP) $(BUILD)/bare/host/bare_host $(abspath $(BUILD)/ocbg.so)
