/*
 * buffers.h — how long the RESP server's buffers keep their memory. A buffer that grew for one
 * large request or reply gives its memory back once it is done with it, instead of holding it
 * for the life of the connection (or the worker); small buffers keep their capacity, so the
 * common request allocates nothing. No PostgreSQL header.
 */
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace local_cache::resp {

/* Bytes of a byte buffer, elements of a vector, kept between requests. */
constexpr size_t kKeptBufferBytes = size_t(1) << 20;
constexpr size_t kKeptElements = 4096;

template <typename T> void release_if_large(std::vector<T> &v)
{
	if (v.capacity() > kKeptElements)
		std::vector<T>().swap(v);
}

inline void release_if_large(std::string &s)
{
	if (s.capacity() > kKeptBufferBytes)
		std::string().swap(s);
}

} // namespace local_cache::resp
