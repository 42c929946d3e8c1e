/*
 * planner.h — the planner hook (see planner.cpp).
 */
#pragma once

#include "extension/pg.h"

namespace local_cache {

void planner_install_hook(void);

} // namespace local_cache
