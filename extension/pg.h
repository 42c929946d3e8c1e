/*
 * pg.h — the one place the extension's C++ includes postgres.h.
 *
 * PostgreSQL headers are C: every PostgreSQL-facing file includes this first (it must come
 * before any other PostgreSQL header), then wraps the headers it uses itself in extern "C".
 */
#pragma once

extern "C" {
#include "postgres.h"

#include "fmgr.h"
}
