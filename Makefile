# local_cache: one shared library built with PGXS from the C++17 sources of every component.
#
#   make              build local_cache.so
#   make install      install it into the PostgreSQL found by PG_CONFIG
#   make unittest     build and run the Boost.Test unit tests (no server needed)
#   make installcheck pg_regress and isolation suites on a temporary instance
#
# tools/test.sh runs all of this (and the stress check) the way CI does.

MODULE_big = local_cache
OBJS = \
	extension/local_cache.o \
	extension/shard.o \
	extension/store.o \
	extension/relinfo.o \
	extension/invalidation.o \
	extension/fetch.o \
	extension/planner.o \
	extension/sql_functions.o \
	fdw/options.o \
	fdw/planning.o \
	fdw/scan.o

EXTENSION = local_cache
DATA = sql/local_cache--1.0.sql
PGFILEDESC = "local_cache - shared-memory row cache for PostgreSQL tables"

REGRESS = setup mget invalidation ddl privileges stats fdw fdw_errors
REGRESS_OPTS = --inputdir=regress --outputdir=$(REGRESS_OUTPUT) \
	--temp-instance=$(REGRESS_OUTPUT)/tmp_check --temp-config=regress/regress.conf
ISOLATION = fill_race old_snapshot own_writes two_phase fdw_consistency
ISOLATION_OPTS = --inputdir=regress --outputdir=$(ISOLATION_OUTPUT) \
	--temp-instance=$(ISOLATION_OUTPUT)/tmp_check --temp-config=regress/regress.conf
# TAP tests (PostgreSQL::Test::Cluster) run when asked: make installcheck TAP_TESTS=1
PROVE_TESTS = regress/t/*.pl
REGRESS_OUTPUT ?= regress/output
ISOLATION_OUTPUT ?= regress/output_isolation

PG_CONFIG ?= pg_config
PG_CXXFLAGS = -std=c++17 -O2 -Wall -Wno-register -Wno-missing-field-initializers
SHLIB_LINK = -lstdc++

# The server-dev package turns on LLVM bitcode, which would compile our C++ with clang
# without PG_CXXFLAGS; JIT inlining of this code buys nothing, so skip it.
override with_llvm = no

PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# Rebuild objects when a header they include changes.
override CPPFLAGS += -MMD -MP
-include $(OBJS:.o=.d)

# Boost.Test unit tests: the parts written without PostgreSQL headers.
UNITTEST_BIN = extension/tests/unit_tests
UNITTEST_SRCS = extension/tests/shard_test.cpp extension/shard.cpp

$(UNITTEST_BIN): $(UNITTEST_SRCS) extension/shard.h
	$(CXX) -std=c++17 -O1 -g -Wall -DBOOST_TEST_DYN_LINK -Iextension -o $@ $(UNITTEST_SRCS) \
		-lboost_unit_test_framework

.PHONY: unittest
unittest: $(UNITTEST_BIN)
	./$(UNITTEST_BIN) --report_level=short --log_level=test_suite

clean: clean-local
.PHONY: clean-local
clean-local:
	rm -f $(UNITTEST_BIN) $(OBJS:.o=.d)
	rm -rf regress/output regress/output_isolation
