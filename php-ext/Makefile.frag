
# The Go library libephpm.so is built next to ephpm.so and installed beside
# it, where the extension looks for it (or name it with ephpm.library).
# GOTOOLCHAIN=auto: build with the Go release go.mod names (fetched if the
# installed go is older).
EPHPM_GO = go
EPHPM_GO_SRC = $(srcdir)/..

all: $(phplibdir)/libephpm.so

$(phplibdir)/libephpm.so: $(shell find $(EPHPM_GO_SRC) -name '*.go' -not -path '*/build/*' 2>/dev/null) $(wildcard $(EPHPM_GO_SRC)/bridge/*.c $(EPHPM_GO_SRC)/bridge/*.h)
	cd $(EPHPM_GO_SRC) && CGO_ENABLED=1 GOTOOLCHAIN=auto PATH="$$PATH:/usr/local/go/bin" $(EPHPM_GO) build -trimpath -buildvcs=false \
		-buildmode=c-shared "-ldflags=-extldflags=-Wl,--version-script=$(EPHPM_GO_SRC)/bridge/exports.map,-soname,libephpm.so" \
		-o $(phplibdir)/libephpm.so ./cmd/libephpm
	rm -f $(phplibdir)/libephpm.h

install: install-ephpm-library

install-ephpm-library: $(phplibdir)/libephpm.so
	$(mkinstalldirs) $(INSTALL_ROOT)$(EXTENSION_DIR)
	$(INSTALL) -m 0755 $(phplibdir)/libephpm.so $(INSTALL_ROOT)$(EXTENSION_DIR)/libephpm.so
