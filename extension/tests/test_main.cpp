/*
 * test_main.cpp — the Boost.Test module "shard": the unit tests of local_cache::Shard
 * (extension/shard.{h,cpp}) in the shard_*_test.cpp files of this folder link into one binary
 * with this file; their helpers and fixture are in shard_harness.h.
 */
#define BOOST_TEST_MODULE shard
#include <boost/test/unit_test.hpp>
