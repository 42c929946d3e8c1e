# local_cache: one shared library built with PGXS from the C++17 sources of every component.
#
#   make              build local_cache.so
#   make install      install it into the PostgreSQL found by PG_CONFIG
#   make unittest     build and run the Boost.Test unit tests (no server needed)
#   make installcheck pg_regress and isolation suites against the running server named by
#                     PGHOST/PGPORT (PGXS's convention), which must preload local_cache
#   make check        the same suites on a temporary instance (regress/regress.conf)
#
# tools/test.sh runs all of this (and the stress check) the way CI does.

MODULE_big = local_cache
# Sources by folder: every .cpp of a component's folders is part of the library (their unit
# tests and fuzz targets live in tests/ folders). resp_server/'s layers are its sub-folders
# (resp_server/README.md); tools/check_tree.py keeps their include rules.
project_root := $(patsubst %/,%,$(dir $(firstword $(MAKEFILE_LIST))))
SOURCE_DIRS = extension fdw resp_server resp_server/protocol resp_server/commands resp_server/net \
	resp_server/clients resp_server/pg resp_server/auth
OBJS = local_cache.o $(sort $(patsubst $(project_root)/%.cpp,%.o,$(foreach d,$(SOURCE_DIRS),$(wildcard $(project_root)/$(d)/*.cpp))))

EXTENSION = local_cache
DATA = sql/local_cache--1.0.sql sql/local_cache--1.0--1.1.sql sql/local_cache--1.1--1.2.sql \
	sql/local_cache--1.2--1.3.sql sql/local_cache--1.3--1.4.sql \
	sql/local_cache--1.4--1.5.sql
PGFILEDESC = "local_cache - shared-memory row cache for PostgreSQL tables"
# Installed under $(docdir)/extension/local_cache/ (set after the PGXS include below).
# With every doc of docs/ but the generated benchmark report.
DOCS = README.md CHANGELOG.md SECURITY.md LICENSE \
	$(patsubst $(project_root)/%,%,$(filter-out %/BENCHMARKS.md,$(wildcard $(project_root)/docs/*.md)))

REGRESS = setup admin mget invalidation ddl capture privileges negative keys_text keys_uuid keys_composite prepared_xacts serializable stats fdw fdw_keys fdw_errors
REGRESS_OPTS = --inputdir=regress --outputdir=$(REGRESS_OUTPUT)
ISOLATION = fill_race old_snapshot own_writes two_phase fdw_consistency capture_change negative_entries negative_commit_order \
	serializable_write_skew serializable_read_only serializable_gap epq_key_change
ISOLATION_OPTS = --inputdir=regress --outputdir=$(ISOLATION_OUTPUT)
# TAP tests (PostgreSQL::Test::Cluster) run when asked: make installcheck TAP_TESTS=1
PROVE_TESTS = regress/t/*.pl
REGRESS_OUTPUT ?= regress/output
ISOLATION_OUTPUT ?= regress/output_isolation

PG_CONFIG ?= pg_config
# Link-time optimization: the RESP hit path's steps live in several files (key bytes, store,
# shard, reply), and a request of many keys calls each once per key; inlined across files, an
# MGET of 64 keys costs its worker about 7% less CPU (docs/OPERATIONS.md, "MGET of 64 keys").
PG_CXXFLAGS = -std=c++17 -O2 -flto=auto -fno-semantic-interposition -Wall -Wno-register -Wno-missing-field-initializers
# The extension's version, from the control file (INFO reports it).
LOCAL_CACHE_VERSION := $(shell sed -n "s/^default_version = '\(.*\)'/\1/p" $(project_root)/local_cache.control)
# One include root: every project header is named from the top of the tree ("extension/fetch.h").
PG_CPPFLAGS = -I$(project_root) -DLOCAL_CACHE_VERSION='"$(LOCAL_CACHE_VERSION)"'
SHLIB_LINK = -luv -luring -lssl -lcrypto -lstdc++ -Wl,-Bsymbolic-functions -flto=auto

# The server-dev package turns on LLVM bitcode, which would compile our C++ with clang
# without PG_CXXFLAGS; JIT inlining of this code buys nothing, so skip it.
override with_llvm = no

PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# The docs in a folder of their own: every extension's README.md would meet in extension/.
docmoduledir := extension/local_cache

# `make check`: the suites on temporary instances that pg_regress starts from the installed
# PostgreSQL and extension (`make install` first), with regress/regress.conf. PGXS has no `check`
# for extensions, only a message: this recipe replaces it (make warns that it does).
check:
ifdef REGRESS
	$(pg_regress_installcheck) $(REGRESS_OPTS) --temp-instance=$(REGRESS_OUTPUT)/tmp_check \
		--temp-config=regress/regress.conf $(REGRESS)
endif
ifdef ISOLATION
	$(pg_isolation_regress_installcheck) $(ISOLATION_OPTS) --temp-instance=$(ISOLATION_OUTPUT)/tmp_check \
		--temp-config=regress/regress.conf $(ISOLATION)
endif

# `make installcheck` of the SQL suites first asks the server whether it preloads the library:
# without it every test would fail on the same error, which one line says better.
ifneq ($(REGRESS)$(ISOLATION),)
installcheck: installcheck-preloaded
endif
.PHONY: installcheck-preloaded
installcheck-preloaded:
	@libs=$$('$(bindir)/psql' -X -At -d postgres -c 'SHOW shared_preload_libraries') || { \
		echo "make installcheck: cannot query the server named by PGHOST/PGPORT ($${PGHOST:-default socket}:$${PGPORT:-default port}$$([ "$$(id -u)" = 0 ] && [ -z "$${PGUSER:-}" ] && echo '; as root, set PGUSER')); make check runs a temporary instance instead" >&2; exit 1; }; \
	case ",$$(echo "$$libs" | tr -d '" ')," in *,local_cache,*) ;; *) \
		echo "make installcheck: the server at $${PGHOST:-default socket}:$${PGPORT:-default port} does not preload local_cache (shared_preload_libraries = '$$libs'): add it and restart, or run make check for a temporary instance" >&2; exit 1;; esac

# Rebuild objects when a header they include changes.
override CPPFLAGS += -MMD -MP
-include $(OBJS:.o=.d)

# Boost.Test unit tests and the libFuzzer targets are built from the PostgreSQL-free set
# (docs/TECHNICAL.md, "Layers"), which no list names: `reach` follows a build's own files to
# every project header they include and the .cpp beside each such header, as the pg-free rule of
# tools/check_tree.py does. They compile without PostgreSQL's include path, so a PostgreSQL
# header in what they reach fails the build too. Each component's tests are the .cpp files of its
# tests/ folder (test_main.cpp and *_test.cpp; fuzz_*.cpp are the libFuzzer targets below).
# (`.include` in the sed expression: a literal # would start a comment in older makes.)
project_includes = $(wildcard $(shell sed -n 's/^[[:space:]]*.[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' $(1) /dev/null))
with_cpp = $(sort $(1) $(wildcard $(patsubst %.h,%.cpp,$(filter %.h,$(1)))))
# reach_from KNOWN,NEW: only the files found last are read again.
reach_from = $(if $(2),$(call reach_from,$(sort $(1) $(2)),$(filter-out $(1) $(2),$(call with_cpp,$(call project_includes,$(2))))),$(1))
reach = $(call reach_from,,$(call with_cpp,$(1)))

UNITTEST_CXXFLAGS = -std=c++17 -O1 -g -Wall -DBOOST_TEST_DYN_LINK -I.
UNITTEST_BIN = extension/tests/unit_tests
UNITTEST_SRCS := $(filter %.cpp,$(call reach,$(wildcard extension/tests/test_main.cpp extension/tests/*_test.cpp)))

# Each source is compiled on its own into .unittest/ (make -j compiles them in parallel; a
# change rebuilds only what it touches).
UNITTEST_OBJDIR = .unittest
unittest_objects = $(patsubst %.cpp,$(UNITTEST_OBJDIR)/%.o,$(1))

$(UNITTEST_OBJDIR)/%.o: %.cpp
	@mkdir -p $(@D)
	$(CXX) $(UNITTEST_CXXFLAGS) -MMD -MP -c -o $@ $<

$(UNITTEST_BIN): $(call unittest_objects,$(UNITTEST_SRCS))
	$(CXX) -o $@ $^ -lboost_unit_test_framework -pthread

# The RESP server's PostgreSQL-free layers (protocol/, commands/; the transport net/ and the
# clients clients/, whose files, like the handlers, mostly have no header of their own) and what
# they and the tests reach: the command layer over fakes of the data-source interfaces, the
# transport and the clients over socket pairs through both backends (io_uring, libuv).
RESP_UNITTEST_BIN = resp_server/tests/unit_tests
RESP_LAYER_SRCS = $(wildcard resp_server/protocol/*.cpp resp_server/commands/*.cpp)
RESP_TRANSPORT_SRCS = $(wildcard resp_server/net/*.cpp resp_server/clients/*.cpp)
RESP_UNITTEST_SRCS := $(filter %.cpp,$(call reach,$(RESP_LAYER_SRCS) $(RESP_TRANSPORT_SRCS) \
	$(wildcard resp_server/tests/test_main.cpp resp_server/tests/*_test.cpp)))

$(RESP_UNITTEST_BIN): $(call unittest_objects,$(RESP_UNITTEST_SRCS))
	$(CXX) -o $@ $^ -lboost_unit_test_framework -luv -luring -lssl -lcrypto -pthread

-include $(patsubst %.o,%.d,$(call unittest_objects,$(UNITTEST_SRCS) $(RESP_UNITTEST_SRCS)))

.PHONY: unittest
unittest: $(UNITTEST_BIN) $(RESP_UNITTEST_BIN)
	./$(UNITTEST_BIN) --report_level=short --log_level=test_suite
	./$(RESP_UNITTEST_BIN) --report_level=short --log_level=test_suite

# libFuzzer targets (clang; Debian: clang, libclang-rt-14-dev): the RESP request parser, the
# command layer (requests from the parser run against the unit tests' fake data sources),
# and the key bytes and key text every RESP key goes through; each built from what its file
# reaches (above). FUZZ_SECONDS is the time of the whole run: `make fuzz` gives each target a
# third of it, `make fuzz-parser` (`fuzz-commands`, `fuzz-keys`) all of it to the one. Crash
# inputs are written under FUZZ_ARTIFACTS, named after the target.
FUZZ_CXX ?= clang++
FUZZ_CXXFLAGS = -std=c++17 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -I.
FUZZ_BIN = resp_server/tests/fuzz_parser
FUZZ_COMMANDS_BIN = resp_server/tests/fuzz_commands
FUZZ_KEYS_BIN = extension/tests/fuzz_keys
FUZZ_SECONDS ?= 30
FUZZ_ARTIFACTS ?= /tmp/local_cache_fuzz

$(FUZZ_BIN): $(call reach,resp_server/tests/fuzz_parser.cpp)
	$(FUZZ_CXX) $(FUZZ_CXXFLAGS) -o $@ $(filter %.cpp,$^)

$(FUZZ_KEYS_BIN): $(call reach,extension/tests/fuzz_keys.cpp)
	$(FUZZ_CXX) $(FUZZ_CXXFLAGS) -o $@ $(filter %.cpp,$^)

$(FUZZ_COMMANDS_BIN): $(call reach,resp_server/tests/fuzz_commands.cpp $(RESP_LAYER_SRCS))
	$(FUZZ_CXX) $(FUZZ_CXXFLAGS) -o $@ $(filter %.cpp,$^) -lssl -lcrypto -pthread

# fuzz_run BINARY DICTIONARY SEEDS: runs one target, new inputs in a throwaway directory so the
# checked-in seeds stay as they are. The "fuzz target:" line tells tools/test.sh whose output
# follows.
FUZZ_SHARE = $(if $(filter fuzz,$(MAKECMDGOALS)),$(shell s=$$(( $(FUZZ_SECONDS) / 3 )); echo $$(( s > 0 ? s : 1 ))),$(FUZZ_SECONDS))
define fuzz_run
	@echo "fuzz target: $(notdir $(1))"
	mkdir -p $(FUZZ_ARTIFACTS)
	corpus=$$(mktemp -d) && \
	./$(1) -max_total_time=$(FUZZ_SHARE) $(if $(2),-dict=$(2)) \
		-artifact_prefix=$(FUZZ_ARTIFACTS)/$(notdir $(1))- -print_final_stats=1 \
		$$corpus $(3); \
	status=$$?; rm -rf "$$corpus"; exit $$status
endef

.PHONY: fuzz fuzz-parser fuzz-commands fuzz-keys
fuzz: fuzz-parser fuzz-commands fuzz-keys

fuzz-parser: $(FUZZ_BIN)
	$(call fuzz_run,$(FUZZ_BIN),resp_server/tests/fuzz_parser.dict,resp_server/tests/fuzz_corpus)

fuzz-commands: $(FUZZ_COMMANDS_BIN)
	$(call fuzz_run,$(FUZZ_COMMANDS_BIN),resp_server/tests/fuzz_commands.dict,resp_server/tests/fuzz_commands_corpus)

fuzz-keys: $(FUZZ_KEYS_BIN)
	$(call fuzz_run,$(FUZZ_KEYS_BIN),,)

clean: clean-local
.PHONY: clean-local
clean-local:
	rm -rf $(UNITTEST_OBJDIR)
	rm -f $(UNITTEST_BIN) $(RESP_UNITTEST_BIN) $(FUZZ_BIN) $(FUZZ_COMMANDS_BIN) $(FUZZ_KEYS_BIN) $(OBJS:.o=.d)
	rm -rf regress/output regress/output_isolation
