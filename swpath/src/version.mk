# SPDX-License-Identifier: Apache-2.0
# The version is the controller package's (one string for quicknat and
# quicknat-swpath): read from the file that defines it, not copied. Included
# by every Makefile that compiles control/format.c or control/main.c, with
# VERSION_FILE's path relative to it.
SP_VERSION := $(shell sed -n 's/^__version__ = "\(.*\)"$$/\1/p' $(VERSION_FILE))
ifeq ($(SP_VERSION),)
$(error no __version__ in $(VERSION_FILE))
endif
