/*
 * callback.h — the guard every libuv callback and every ring completion runs through, so no
 * C++ exception crosses libuv's or the kernel's C frames, and the named wrappers every libuv
 * registration uses (tools/check_tree.py's `boundary` check fails on any other):
 *
 *   uv_callback<impl>          a noexcept function with impl's signature that runs impl through
 *                              guarded(); a failure is logged (set_callback_failure_log)
 *   connection_callback<impl>  the same, and a failure ends the stream its first argument (a
 *                              handle or request) belongs to through ->data (Stream::fail)
 *
 * impl is written as if no C++ exception existed. No PostgreSQL or libuv header.
 */
#pragma once

#include "resp_server/net/transport.h"

#include <cstdio>
#include <exception>

namespace local_cache::resp {

/* Where a failure that concerns no stream goes (a timer's, a listener's): the owner of the loop
 * sets it (the worker: its log); by default standard error. */
using CallbackFailureLog = void (*)(const char *what) noexcept;
void set_callback_failure_log(CallbackFailureLog log) noexcept;
void log_callback_failure(const char *what) noexcept;

/* Runs body; a C++ exception's message is copied and handed to fail(message) once the handler
 * has finished. */
template <typename Body, typename Fail> void guarded(Body &&body, Fail &&fail) noexcept
{
	char message[256];
	try {
		body();
		return;
	} catch (const std::exception &e) {
		snprintf(message, sizeof(message), "%s", e.what());
	} catch (...) {
		snprintf(message, sizeof(message), "%s", "unknown C++ exception");
	}
	fail(static_cast<const char *>(message));
}

namespace detail {
template <typename Function, Function impl, bool ends_stream> struct UvCallback;
template <typename First, typename... Rest, void (*impl)(First *, Rest...), bool ends_stream>
struct UvCallback<void (*)(First *, Rest...), impl, ends_stream> {
	static void call(First *first, Rest... rest) noexcept
	{
		guarded([&] { impl(first, rest...); },
				[&](const char *what) noexcept {
					if (ends_stream)
						static_cast<Stream *>(first->data)->fail(what);
					else
						log_callback_failure(what);
				});
	}
};
} // namespace detail

template <auto impl> inline constexpr auto uv_callback = &detail::UvCallback<decltype(impl), impl, false>::call;
template <auto impl>
inline constexpr auto connection_callback = &detail::UvCallback<decltype(impl), impl, true>::call;

} // namespace local_cache::resp
