/*
 * utility.h — the ProcessUtility hook (see utility.cpp).
 */
#pragma once

namespace local_cache {

void utility_install_hook(void);

} // namespace local_cache
