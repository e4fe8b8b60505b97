# Sourced by every script that runs go: the official toolchain's path, and
# GOTOOLCHAIN=auto, so that an older installed go (1.21 or later) fetches the
# Go release go.mod's toolchain line names through the module proxy, even
# where the installation defaults to GOTOOLCHAIN=local.
export PATH=$PATH:/usr/local/go/bin
export GOTOOLCHAIN=auto
