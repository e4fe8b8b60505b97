
# The Go library libephpm.so is built next to ephpm.so and installed beside
# it, where the extension looks for it (or name it with ephpm.library).
# scripts/build-library.sh is the one recipe (CMake's too).
EPHPM_GO_SRC = $(srcdir)/..

all: $(phplibdir)/libephpm.so

$(phplibdir)/libephpm.so: $(shell find $(EPHPM_GO_SRC) -name '*.go' -not -path '*/build/*' 2>/dev/null) $(wildcard $(EPHPM_GO_SRC)/bridge/*.c $(EPHPM_GO_SRC)/bridge/*.h)
	$(EPHPM_GO_SRC)/scripts/build-library.sh $(phplibdir)/libephpm.so

install: install-ephpm-library

install-ephpm-library: $(phplibdir)/libephpm.so
	$(mkinstalldirs) $(INSTALL_ROOT)$(EXTENSION_DIR)
	$(INSTALL) -m 0755 $(phplibdir)/libephpm.so $(INSTALL_ROOT)$(EXTENSION_DIR)/libephpm.so
