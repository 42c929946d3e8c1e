/*
 * test_main.cpp — the Boost.Test module of the RESP protocol layer (resp_server/): the parser,
 * reply encoding and command tests in this folder link into one binary with this file.
 */
#define BOOST_TEST_MODULE resp_server
#include <boost/test/unit_test.hpp>
